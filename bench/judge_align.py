"""An alignment head over frozen MiniLM token states as the second tier: its dev figures.

Trains the decomposable-attention head of bench/judge_align_fit.py over frozen MiniLM token states
(bench/judge_align_states.py: every dev claim of bench/judge_minilm.py's sets and its
``--sentences`` aligned chunk sentences) jointly with a linear term over tier 1's claim
features, on the pooled dev sets (each set weighted equally), with jax (training only:
``make align-train``). Per outer grouped fold: the head is trained on the training folds; its
isotonic map and number cap come from outputs cross-validated within them (``--inner``
grouped folds, each a training of its own), as bench/judge_quality.py's fit_model does.

Per set the script prints, on the same folds and at the fold's tier-1 threshold (the judge's
verdict rule): tier 1, the current MiniLM tier's head ("+minilm", judge_minilm's four
features), this head ("align") and the tiered judge with this head on tier 1's band
("banded").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_align_fit as fit  # noqa: E402
import judge_dev_data as dev  # noqa: E402
import judge_quality as jq  # noqa: E402
from judge_align_states import load_states  # noqa: E402
from judge_minilm import _table  # noqa: E402
from ragpulse.collector.judge.tiers import minilm  # noqa: E402

__all__ = ["main", "mini4", "mini_features"]


def mini4(tokens: list[str], claim: np.ndarray, sentences: list[np.ndarray]) -> list[float]:
    """The MiniLM tier's four features (:meth:`minilm.Aligner.features`, same formulas) of a
    claim (word pieces and states) against its sentences' states."""
    keep = np.array([x not in fit.PUNCT for x in tokens[1:-1]], dtype=bool)
    if not sentences or not keep.any():
        return [0.0] * 4
    best = (fit.unit(claim[1:-1])[keep] @ np.concatenate([fit.unit(s[1:-1]) for s in sentences]).T).max(1)
    cos = max(float(fit.unit(claim.mean(0)) @ fit.unit(s.mean(0))) for s in sentences)
    return [cos, float(best.mean()), float(best.min()), float(np.sort(best)[:3].mean())]


def mini_features(states: Any) -> np.ndarray:
    """:func:`mini4` of every cached claim against its three aligned sentences: the features
    of judge_minilm's "+minilm" head."""
    return np.array(
        [
            mini4(
                states.tokens[t],
                states.text_states(t).astype(np.float32),
                [states.text_states(s).astype(np.float32) for s in states.sents[i][: states.n3[i]]],
            )
            for i, t in enumerate(states.claim)
        ]
    )


def _verdict(p: np.ndarray, data: jq.Data, rows: np.ndarray, thr: float) -> np.ndarray:
    return jq.verdict_score(p, data.strong[rows], data.neg[rows]) >= thr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=dev.DATA)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--inner", type=int, default=3, help="grouped inner folds for the calibration map")
    ap.add_argument("--sentences", type=int, default=3, help="aligned sentences per claim (at most 6)")
    ap.add_argument("--factscore-share", type=float, default=0.25)
    ap.add_argument("--band", type=float, nargs=2, default=(0.35, 0.65))
    ap.add_argument(
        "--with-mini", action="store_true", help="the MiniLM tier's 4 features in the linear term"
    )
    ap.add_argument("--json", type=Path, help="write the figures here")
    fit.add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        import jax  # noqa: F401

        states = load_states(args.data, 6, args.factscore_share)
    except (ImportError, minilm.TierUnavailable) as exc:
        # Optional pieces (jax: `make align-train`; the MiniLM package): say so, measure nothing.
        print(f"bench/judge_align.py: nothing measured: {exc}")
        return 0
    items = dev.load_items(args.data)
    base = jq.Data([items[i] for i in states.keep], args.folds)
    plus = jq.Data([items[i] for i in states.keep], args.folds)
    plus.x = np.hstack([base.x, mini_features(states)])
    t0 = time.process_time()
    arrays = fit.prepare(states, plus.x if args.with_mini else base.x, args.sentences, args.dim)
    print(f"{len(base.y)} claims, inputs prepared in {time.process_time() - t0:.0f} CPU-s", file=sys.stderr)
    n = len(base.y)
    out = {k: np.zeros(n) for k in ("p1", "p2", "p3")}
    pred = {k: np.zeros(n, dtype=bool) for k in ("p1", "p2", "p3")}
    t0 = time.process_time()
    for k in range(args.folds):
        test = base.fold == k
        fit1, fit2 = jq.fit_model(base, ~test), jq.fit_model(plus, ~test)
        thr = fit1["threshold"]
        out["p1"][test] = jq.predict(fit1, base, test)
        out["p2"][test] = jq.predict(fit2, plus, test)
        head = fit.fit_head(arrays, base, ~test, args)
        out["p3"][test] = fit.predict_head(head, arrays, base, test, args)
        for key in out:
            pred[key][test] = _verdict(out[key][test], base, test, thr)
        print(f"  fold {k}: {time.process_time() - t0:.0f} CPU-s", file=sys.stderr, flush=True)
    band = (out["p1"] >= args.band[0]) & (out["p1"] < args.band[1])
    judges = {
        "tier1": (out["p1"], pred["p1"]),
        "+minilm": (out["p2"], pred["p2"]),
        "align": (out["p3"], pred["p3"]),
        "banded": (np.where(band, out["p3"], out["p1"]), np.where(band, pred["p3"], pred["p1"])),
    }
    print(
        f"align head: {args.sentences} sentences, inputs {'+'.join(args.inputs)}, d={args.dim}, "
        f"hidden {args.hidden}, {args.epochs} epochs, linear term over "
        f"{plus.x.shape[1] if args.with_mini else base.x.shape[1]} features"
    )
    print(f"banded: the head on the claims whose tier-1 probability is in [{args.band[0]}, {args.band[1]})")
    results = _table(base, judges, band)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
