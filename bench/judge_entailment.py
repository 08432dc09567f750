"""The local judge's entailment tier on the development data: its figures and its weights.

The shipped entailment model (:mod:`ragpulse.collector.judge.tiers.entailment`, int8 ONNX)
reads every dev claim against the premise the tier builds for it at run time (the
``--sentences`` chunk sentences tier 1 aligns it with). Then, on the same grouped folds, per
set: tier 1 alone ("tier1", the claim features), tier 1 with the MiniLM similarity tier's
features ("+minilm", :mod:`judge_minilm`; when its weights package is installed), tier 1 with
the entailment probabilities ("+entail") and the tiered judge as it runs ("banded": the
"+entail" probability for claims whose tier-1 probability lies in ``--band`` and that no
chunk supports on its own): balanced accuracy, macro-F1, AUROC and ECE, and the share of claims
escalated; and the entailment model alone (its entailment probability, threshold 0.5).
Verdicts use tier 1's threshold throughout, as the judge does. FActScore is subsampled by
person (``--factscore-share``, a quarter by default) to keep the run to minutes; the model's
probabilities are cached under ``.cache/judge-quality/`` by the model's hash and the data.

``--write-weights`` fits the tier's head on every row (isotonic map and number cap from its
cross-validated outputs) and writes the packaged ``weights/claim-entail-v1.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
import judge_minilm as jmini  # noqa: E402
import judge_quality as jq  # noqa: E402
from ragpulse.collector.judge.local.claims import normalise_claim  # noqa: E402
from ragpulse.collector.judge.local.judge import QUESTION_WORDS  # noqa: E402
from ragpulse.collector.judge.local.rules.approximate import claim_profile  # noqa: E402
from ragpulse.collector.judge.local.support import claim_view  # noqa: E402
from ragpulse.collector.judge.text.tokens import profile  # noqa: E402
from ragpulse.collector.judge.tiers import entailment  # noqa: E402
from ragpulse.collector.judge.tiers.band import DEFAULT_BAND  # noqa: E402

__all__ = ["entail_probabilities", "main"]

WEIGHTS = jq.WEIGHTS.with_name("claim-entail-v1.json")
# A claim the tier reads as contradicted is marked so only at this contradiction probability:
# on the dev claims the model gives >= 0.9, 75% are unsupported (0.6 at >= 0.5).
CONTRADICTION_THRESHOLD = 0.9


def entail_probabilities(args: argparse.Namespace, model: entailment.EntailmentModel) -> list[Any]:
    """Per dev claim (dev.load_items order): the model's [entailment, neutral, contradiction]
    probabilities against its aligned premise, None where subsampled out."""

    def read(rec: dict[str, Any], chunks: list[Any]) -> list[Any]:
        qstems = frozenset(s for s in profile(rec["query"]).stem_set if s not in QUESTION_WORDS)
        pairs = []
        for text, _ in rec["claims"]:
            claim = normalise_claim(text)
            keys = claim_view(claim_profile(claim, chunks), qstems).keys
            texts, _ = entailment.aligned_premise(keys, chunks, args.sentences)
            pairs.append((" ".join(texts), claim))
        probs = model.probabilities([p for p in pairs if p[0]]) if any(p[0] for p in pairs) else []
        it = iter(probs)
        # No aligned sentence: nothing to read, the tier leaves the claim to tier 1.
        return [next(it) if p[0] else np.array([0.0, 1.0, 0.0]) for p in pairs]

    return dev.per_claim(args.data, args.factscore_share, "entailment:", read)


def _cached(args: argparse.Namespace) -> tuple[list[Any], dict[str, float]]:
    model = entailment.EntailmentModel(cache_size=1 << 30)
    h = hashlib.sha256(dev._cache_key(args.data).encode())
    h.update(f"{model.sha256}:{args.sentences}:{args.factscore_share}".encode())
    path = dev.CACHE / f"entail-{h.hexdigest()[:16]}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    t0 = time.process_time()
    probs = entail_probabilities(args, model)
    cost = {"pairs": model.pairs_scored, "cpu_s": time.process_time() - t0}
    dev.CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps((probs, cost)))
    return probs, cost


def _minilm(args: argparse.Namespace) -> list[Any] | None:
    """The MiniLM tier's features for the same claims, None without its weights package."""
    margs = argparse.Namespace(
        model=None,
        data=args.data,
        sentences=args.sentences,
        layers=None,
        backend=jmini.minilm.DEFAULT_BACKEND,
        factscore_share=args.factscore_share,
    )
    try:
        return jmini._cached_features(margs)[0]
    except jmini.minilm.TierUnavailable as exc:
        print(f"+minilm left out: {exc}")
        return None


def _oof(data: jq.Data, thr_from: jq.Data, folds: int) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probabilities of a claim model on ``data`` and its verdicts at the fold's
    tier-1 threshold (fit on ``thr_from``, tier 1's features)."""
    p = np.zeros(len(data.y))
    pred = np.zeros(len(data.y), dtype=bool)
    for k in range(folds):
        test = data.fold == k
        fit, fit1 = jq.fit_model(data, ~test), jq.fit_model(thr_from, ~test)
        p[test] = jq.predict(fit, data, test)
        pred[test] = jq.verdict_score(p[test], data.strong[test], data.neg[test]) >= fit1["threshold"]
    return p, pred


def write_weights(plus: jq.Data) -> None:
    """Fit the tier's head on every row and write the packaged weights file."""
    fit = jq.fit_model(plus, np.ones(len(plus.y), dtype=bool))
    tier1 = json.loads(jq.WEIGHTS.read_text())
    about = (
        "Local judge entailment tier: logistic over the claim features and the entailment "
        "model's entailment and contradiction logits (tiers/models/entailment-v1.onnx, premise: "
        "the 3 chunk sentences tier 1 aligns the claim with), isotonic calibration, number cap; "
        "fit by bench/judge_entailment.py --write-weights on the development data "
        "(AttributionBench dev, FActScore (a quarter of the people), Factcheck-GPT, WiCE dev; "
        "each set weighted equally; calibration from grouped cross-validated outputs). "
        "threshold and weak are tier 1's (claim-v4.json): the judge applies tier 1's verdict rules."
    )
    body = json.loads(
        jq.weights_json("1", about, list(entailment.TIER_FEATURES), fit, tier1["threshold"], tier1["weak"])
    )
    body["contradiction_threshold"] = CONTRADICTION_THRESHOLD
    WEIGHTS.write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {WEIGHTS} ({len(fit['knots'][0])} calibration knots, number cap {fit['number_cap']})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=dev.DATA)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--sentences", type=int, default=3)
    ap.add_argument("--factscore-share", type=float, default=0.25)
    ap.add_argument("--band", type=float, nargs=2, default=DEFAULT_BAND)
    ap.add_argument("--no-minilm", action="store_true", help="leave the MiniLM tier's column out")
    ap.add_argument("--write-weights", action="store_true", help="write weights/claim-entail-v1.json")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    if not (args.data / "judge-dev").is_dir():
        print(f"dev data not found under {args.data}: nothing to measure", file=sys.stderr)
        return 2
    probs, cost = _cached(args)
    mini = None if args.no_minilm else _minilm(args)
    items = dev.load_items(args.data)
    keep = [i for i, p in enumerate(probs) if p is not None]
    base = jq.Data([items[i] for i in keep], args.folds)
    nli = np.array([probs[i] for i in keep], dtype=float)
    plus = jq.Data([items[i] for i in keep], args.folds)
    plus.x = np.hstack([base.x, np.array(entailment.entail_features(nli))])
    print(
        f"{len(keep)} claims; {cost['pairs']} pairs read in {cost['cpu_s']:.0f} CPU-s "
        f"({cost['pairs'] / max(cost['cpu_s'], 1e-9):.1f} pairs per CPU-second)"
    )
    judges: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    judges["tier1"] = p1, pred1 = _oof(base, base, args.folds)
    if mini is not None:
        with_mini = jq.Data([items[i] for i in keep], args.folds)
        with_mini.x = np.hstack([base.x, np.array([mini[i] for i in keep])])
        judges["+minilm"] = _oof(with_mini, base, args.folds)
    judges["+entail"] = p2, pred2 = _oof(plus, base, args.folds)
    band = (p1 >= args.band[0]) & (p1 < args.band[1]) & ~base.strong
    judges["banded"] = (np.where(band, p2, p1), np.where(band, pred2, pred1))
    judges["model"] = (nli[:, 0], nli[:, 0] >= 0.5)
    print(
        f"banded: the entailment tier on the claims whose tier-1 probability is in "
        f"[{args.band[0]}, {args.band[1]}) that no chunk supports on its own"
    )
    results = jmini._table(base, judges, band)
    if args.write_weights:
        write_weights(plus)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
