"""``ragpulse judge refit --from-reviews -o weights.json``: refit the local judge's claim head on
the team's claim labels (``ragpulse review``), and write it only when it is better.

The labelled claims of one judge (``--judge``, default the judge with the most
labels) are read against their traces' chunks, the head is refit on them
(:mod:`ragpulse.collector.judge.local.refit`), and the shipped head and the
refit are compared on held-out folds grouped by trace (balanced accuracy of the
verdicts, ECE of the probabilities). The file is written when the refit gains
on one of them by more than twice the standard error of its per-fold gains
and loses on neither by more than that; otherwise the command says why and
writes nothing (exit status 1). Too few labels is a
one-line error that says how many more would help (exit status 2). A judge
configured with the written file (``judge.settings.claim_weights`` in the
collector config, ``--claim-weights`` of ``ragpulse judge``/``eval``) has a new
judge id, so stored scores never shift under the old one.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from .errors import CliError, storage_errors
from .export import open_storage
from .review import add_scope_options, review_scope

__all__ = ["build_parser", "run"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ragpulse judge refit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--from-reviews", action="store_true", required=True, help="the labels of `ragpulse review`"
    )
    p.add_argument(
        "-o", "--output", required=True, help="the weights file to write (only when the refit is better)"
    )
    add_scope_options(p)
    p.add_argument("--base", help="the weights file to start from (default: the packaged claim head)")
    p.add_argument("--folds", type=int, default=5, help="held-out folds, grouped by trace (default 5)")
    p.add_argument("--min-labels", type=int, default=150, help="claim labels needed at least (default 150)")
    p.add_argument(
        "--min-each", type=int, default=30, help="labels needed of each kind, supported and not (default 30)"
    )
    p.set_defaults(func=run, command="judge refit")
    return p


def _labels(args: argparse.Namespace) -> tuple[Any, dict[str, dict[str, Any]], list[tuple[str, str, int]]]:
    from ..review.store import ReviewStore

    storage = open_storage(args)
    with storage_errors(storage):
        storage.apply_schema()
        store = ReviewStore(storage)
        scope = review_scope(args, store)
        labels = [
            lab
            for lab in store.labels(judge_id=scope.judge_id, service=scope.service)
            if lab.claim_index >= 0
        ]
        traces: dict[str, dict[str, Any]] = {}
        claims = []
        for lab in labels:
            if lab.trace_id not in traces:
                t = store.trace(lab.trace_id, scope.judge_id)
                if t is None:
                    continue  # the trace is gone (TTL): its labels cannot be read against chunks
                traces[lab.trace_id] = {k: t[k] for k in ("query", "answer", "chunks", "citations")}
                traces[lab.trace_id]["trace_id"] = lab.trace_id
            claims.append((lab.trace_id, lab.claim_text, 1 if lab.label == "supported" else 0))
    return scope, traces, claims


def _enough(args: argparse.Namespace, claims: list[tuple[str, str, int]], n_traces: int) -> None:
    pos = sum(c[2] for c in claims)
    neg = len(claims) - pos
    short = []
    if len(claims) < args.min_labels:
        short.append(f"{args.min_labels - len(claims)} more claim labels")
    if pos < args.min_each:
        short.append(f"{args.min_each - pos} more supported claims")
    if neg < args.min_each:
        short.append(f"{args.min_each - neg} more unsupported or contradicted claims")
    if n_traces < 2 * args.folds:
        short.append(f"claims from {2 * args.folds - n_traces} more traces")
    if short:
        raise CliError(
            f"too few labels to refit: {len(claims)} claim labels from {n_traces} traces ({pos} supported, "
            f"{neg} unsupported or contradicted); a held-out comparison needs {', '.join(short)} "
            "(label them in `ragpulse review`)"
        )


def _fmt(v: float) -> str:
    return "   -" if math.isnan(v) else f"{v:.3f}"


def run(args: argparse.Namespace) -> int:
    from ..judge.local.refit import compare, featurise, read_base, refit, weights_text

    if args.folds < 3:
        raise CliError("--folds must be at least 3")
    try:
        base_data, base = read_base(args.base)
    except (OSError, ValueError, KeyError) as exc:
        raise CliError(f"cannot read the base weights: {exc}") from None
    scope, traces, claims = _labels(args)
    _enough(args, claims, len(traces))
    data = featurise(traces, claims, base_data["features"])
    pos = int(data.y.sum())
    print(f"claim labels: {len(data.y)} from {len(traces)} traces ({pos} supported, {len(data.y) - pos} "
          f"unsupported or contradicted), labels of judge {scope.judge_id}")  # fmt: skip
    cmp = compare(data, base, args.folds)
    who = f"base {Path(args.base).name}" if args.base else "shipped head"
    print(f"held-out folds: {args.folds}, grouped by trace")
    print(f"  {'head':<28}{'balanced accuracy':>18}{'ECE':>8}")
    for name in ("shipped", "refit"):
        label = f"{who} v{base_data['version']}" if name == "shipped" else "refit on these labels"
        print(f"  {label:<28}{_fmt(cmp.pooled[name]['ba']):>18}{_fmt(cmp.pooled[name]['ece']):>8}")
    for k, r in enumerate(cmp.per_fold):
        print(f"    fold {k}: {'base' if args.base else 'shipped'} {_fmt(r['shipped_ba'])} / ECE {_fmt(r['shipped_ece'])}   "
              f"refit {_fmt(r['refit_ba'])} / ECE {_fmt(r['refit_ece'])}")  # fmt: skip
    verdicts = cmp.verdicts()
    for metric, (gain, se, n) in cmp.gains.items():
        print(f"  {metric}: mean gain over {n} folds {gain:+.3f} (noise: 2 x standard error = "
              f"{2 * se:.3f}): {verdicts[metric]}")  # fmt: skip
    if "too few folds" in verdicts.values():
        print("refused: fewer than 3 folds hold both supported and unsupported claims; label more "
              "unsupported claims (nothing written)")  # fmt: skip
        return 1
    if not cmp.better:
        why = (
            f"worse than the {who} on " + " and ".join(m for m, v in verdicts.items() if v == "worse")
            if "worse" in verdicts.values()
            else f"not better than the {who} by more than the folds' noise"
        )
        print(f"refused: the refit is {why}; nothing written")
        return 1
    head = refit(data, data.y >= 0, base)
    about = (
        f"Local judge claim head refit by `ragpulse judge refit --from-reviews` on {len(data.y)} claim labels "
        f"of {len(traces)} traces (judge {scope.judge_id}), starting from claim head v{base_data['version']}; "
        f"held-out folds: balanced accuracy {cmp.pooled['shipped']['ba']:.3f} -> {cmp.pooled['refit']['ba']:.3f}."
    )
    out = Path(args.output)
    out.write_text(weights_text(base_data, head, about), encoding="utf-8")
    from ..judge.local.judge import LocalJudge

    new_id = LocalJudge(claim_weights=str(out)).judge_id
    better = " and ".join(m for m, v in verdicts.items() if v == "better")
    print(f"refit: better than the {who} on {better}, beyond the folds' noise; wrote {out}")
    print(f"judge id with it: {new_id} (shipped: {LocalJudge().judge_id}); configure it as "
          "judge.settings.claim_weights, or --claim-weights for ragpulse judge / eval")  # fmt: skip
    sys.stdout.flush()
    return 0
