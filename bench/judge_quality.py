"""Local judge claim-support quality on AttributionBench dev.

Each (question, claim, references) triple becomes one claim judged against its
references as chunks; `attributable` is the positive label. Prints, side by side:

- the plain lexical-overlap baseline (share of claim content words found in the
  references, one threshold chosen on the data: an optimistic baseline);
- the shipped local judge (weights file as packaged);
- the honest figure: k-fold cross-validated macro-F1 of the same feature model
  refit on each training fold and scored on the held-out fold (repeated with
  new random splits; mean, spread and worst split are printed).

`--write-weights` refits on all data and writes the packaged weights file.

Usage: python bench/judge_quality.py [--data PATH] [--folds 5] [--repeats 5] [--write-weights]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

from ragpulse.collector.judge.claims import normalise_claim
from ragpulse.collector.judge.evidence import build_evidence
from ragpulse.collector.judge.support import FEATURES, NUM_MISS, fit_logistic, load_model, pair_features
from ragpulse.collector.judge.text import profile

__all__ = ["main", "macro_f1", "load_rows", "featurise"]

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "attributionbench-dev.jsonl"
WEIGHTS = Path(__file__).resolve().parents[1] / "collector" / "judge" / "weights" / "support-v1.json"
# Gradient-descent steps: few enough to act as regularisation (more steps overfit slightly in CV).
ITERATIONS = 400
_URL_LINE = re.compile(r"^\[\d+\]\s*https?://\S+\s*", re.M)


def macro_f1(pred: list[int], gold: list[int]) -> float:
    """Mean of the F1 of both classes."""
    scores = []
    for c in (0, 1):
        tp = sum(1 for p, t in zip(pred, gold, strict=True) if p == c and t == c)
        fp = sum(1 for p, t in zip(pred, gold, strict=True) if p == c and t != c)
        fn = sum(1 for p, t in zip(pred, gold, strict=True) if p != c and t == c)
        scores.append(2 * tp / max(1, 2 * tp + fp + fn))
    return sum(scores) / 2


def load_rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def featurise(row: dict) -> tuple[list[list[float]], float]:
    """Feature vectors of the claim against each reference, and the baseline overlap."""
    claim = profile(normalise_claim(row["claim"]))
    chunks = [
        {"id": str(i), "content": _URL_LINE.sub("", ref) or ref} for i, ref in enumerate(row["references"])
    ]
    ev = build_evidence(chunks)
    q = profile(row.get("question") or "").stem_set
    per_chunk = [pair_features(claim, q, c) for c in ev]
    allref = frozenset().union(*(c.whole.stem_set for c in ev)) if ev else frozenset()
    overlap = len(claim.stem_set & allref) / max(1, len(claim.stem_set))
    return per_chunk, overlap


def _aggregate(per_chunk: list[list[float]], model_prob) -> float:
    # The same numeric veto as SupportModel.probability.
    return max((0.0 if f[NUM_MISS] > 0 else model_prob(f) for f in per_chunk), default=0.0)


def _best_threshold(scores: list[float], gold: list[int]) -> tuple[float, float]:
    best = (0.0, 0.0)
    for t in sorted(set(round(s, 3) for s in scores)):
        f = macro_f1([1 if s >= t else 0 for s in scores], gold)
        if f > best[0]:
            best = (f, t)
    return best


def _fit(rows: list[list[list[float]]], gold: list[int]) -> tuple[list[float], float]:
    # Train on the best-covering reference of each example (the one the judge would pick).
    x = [max(r, key=lambda f: f[0] + f[3]) if r else [0.0] * len(FEATURES) for r in rows]
    return fit_logistic(x, gold, iterations=ITERATIONS)


def _prob(coef: list[float], b: float):
    import math

    def p(f: list[float]) -> float:
        s = b + sum(w * v for w, v in zip(coef, f, strict=True))
        return 1 / (1 + math.exp(-max(-30.0, min(30.0, s))))

    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5, help="repetitions of k-fold CV with new splits")
    ap.add_argument("--write-weights", action="store_true")
    args = ap.parse_args(argv)
    rows = load_rows(args.data)
    t0 = time.perf_counter()
    feats, overlaps = zip(*(featurise(r) for r in rows), strict=True)
    gold = [1 if r["attribution_label"] == "attributable" else 0 for r in rows]
    groups = [r.get("src_dataset", "?") for r in rows]

    base_f1, base_t = _best_threshold(list(overlaps), gold)

    cv_scores = []
    cv_pred = [0] * len(rows)
    for seed in range(args.repeats):
        idx = list(range(len(rows)))
        random.Random(seed).shuffle(idx)
        pred = [0] * len(rows)
        for k in range(args.folds):
            test = set(idx[k :: args.folds])
            train = [i for i in idx if i not in test]
            coef, b = _fit([feats[i] for i in train], [gold[i] for i in train])
            p = _prob(coef, b)
            for i in test:
                pred[i] = 1 if _aggregate(feats[i], p) >= 0.5 else 0
        cv_scores.append(macro_f1(pred, gold))
        if seed == 0:
            cv_pred = pred
    cv_f1 = sum(cv_scores) / len(cv_scores)
    cv_sd = (sum((x - cv_f1) ** 2 for x in cv_scores) / max(1, len(cv_scores) - 1)) ** 0.5

    if args.write_weights:
        coef, b = _fit(list(feats), gold)
        WEIGHTS.parent.mkdir(parents=True, exist_ok=True)
        WEIGHTS.write_text(
            json.dumps(
                {
                    "version": "1",
                    "about": "Local judge claim-support logistic model; fit by bench/judge_quality.py "
                    "--write-weights on attributionbench-dev (all rows).",
                    "features": list(FEATURES),
                    "coef": [round(c, 4) for c in coef],
                    "intercept": round(b, 4),
                    "threshold": 0.5,
                },
                indent=2,
            )
            + "\n"
        )
    model = load_model()
    shipped = [1 if _aggregate(f, model.probability) >= model.threshold else 0 for f in feats]
    shipped_f1 = macro_f1(shipped, gold)

    print(f"data: {args.data.name}  rows={len(rows)}  ({time.perf_counter() - t0:.1f}s)")
    print(f"{'judge':<44}{'macro-F1':>10}")
    print(f"{'lexical-overlap baseline (best threshold ' + format(base_t, '.2f') + ')':<44}{base_f1:>10.4f}")
    label = f"local judge, {args.folds}-fold CV x{args.repeats} (mean)"
    print(f"{label:<44}{cv_f1:>10.4f}   (sd over repeats {cv_sd:.4f}, min {min(cv_scores):.4f})")
    print(f"{'local judge, shipped weights (fit on all)':<44}{shipped_f1:>10.4f}")
    print("per source (cross-validated, first split):")
    for g in sorted(set(groups)):
        ii = [i for i in range(len(rows)) if groups[i] == g]
        print(f"  {g:<24} n={len(ii):<5} {macro_f1([cv_pred[i] for i in ii], [gold[i] for i in ii]):.4f}")
    print(f"weights: {dict(zip(FEATURES, model.coef, strict=True))} intercept={model.intercept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
