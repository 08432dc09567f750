"""``ragpulse judge refit``: refit the local judge's decision on a team's labels, and write it
only when it is better where it matters.

The labels come from ``ragpulse review`` (``--from-reviews``: the store's labels of one judge,
``--judge``, default the judge with the most labels) or from files (``--labels FILE --traces
FILE``: the labels-file format ``review export-labels`` writes, which Label Studio or Argilla
exports and public sets can be turned into, and judge input records). Each labelled trace is
read by the judge's own code; the claim head and the response rule are refit together
(:mod:`ragpulse.collector.judge.local.refit.decision`; a part whose labels fall short of the
minimums keeps the base's values, the response rule then moving with the head); and the base
decision and the refit are compared on held-out folds grouped by trace (or by the ``group``
the labels name): the answer-level decision first, claim balanced accuracy second, ECE
reported, each gain with a 95% bootstrap interval. The file is written only when the
answer-level decision is not worse beyond noise, claim balanced accuracy is not worse, and
one of them gains beyond noise; ECE alone never promotes. Otherwise the command says why and
writes nothing (exit status 1). Too few labels for any part is a one-line error that says how
many more of which kind would help (exit status 2). A learning curve (held-out figures with
25%, 50% and 100% of the labels) shows whether more labels would help. The file holds the
whole decision; a judge configured with it (``judge.settings.claim_weights`` in the collector
config, ``--claim-weights`` of ``ragpulse judge``/``eval``) has a new judge id.
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
    p.add_argument("--from-reviews", action="store_true", help="the labels of `ragpulse review` in the store")
    p.add_argument("--labels", help="a labels file (the format `ragpulse review export-labels` writes)")
    p.add_argument("--traces", help="with --labels: the labelled traces, as `ragpulse judge` input records")
    p.add_argument(
        "-o", "--output", required=True, help="the weights file to write (only when the refit is better)"
    )
    add_scope_options(p)
    p.add_argument(
        "--base", help="the weights file to start from (default: the packaged claim head and rule)"
    )
    p.add_argument("--folds", type=int, default=5, help="held-out folds, grouped by trace (default 5)")
    p.add_argument(
        "--min-labels", type=int, default=150, help="claim labels the claim head needs (default 150)"
    )
    p.add_argument(
        "--min-each", type=int, default=30, help="claim labels of each kind, supported and not (default 30)"
    )
    p.add_argument(
        "--min-answers", type=int, default=40, help="labelled answers the response rule needs (default 40)"
    )
    p.add_argument(
        "--min-answers-each", type=int, default=10, help="answers of each kind, faithful and not (default 10)"
    )
    p.set_defaults(func=run, command="judge refit")
    return p


def _from_store(args: argparse.Namespace) -> tuple[list[Any], dict[str, dict[str, Any]], str]:
    """The review labels of the scope options' judge (the rows ``review export-labels``
    writes) and their traces from the store."""
    from ..review.labels import calibration_rows
    from ..review.store import ReviewStore
    from .refit_labels import store_traces, trace_labels

    storage = open_storage(args)
    with storage_errors(storage):
        storage.apply_schema()
        store = ReviewStore(storage)
        scope = review_scope(args, store)
        records = store.judge_records(scope)
        rows = calibration_rows(records, store.labels(judge_id=scope.judge_id, service=scope.service))
        labs, _ = trace_labels(rows, "the review store")
        traces = store_traces(store, [lab.trace_id for lab in labs], scope.judge_id)
    return labs, traces, scope.judge_id


def _labels(args: argparse.Namespace) -> tuple[list[Any], dict[str, dict[str, Any]], str, str]:
    """The labelled traces, their judge input records, the judge the labels are of, and where
    they came from."""
    from .refit_labels import from_files

    scope_opts = ("db", "config", "service", "since", "judge")
    if args.from_reviews == bool(args.labels):
        raise CliError("give either --from-reviews or --labels FILE --traces FILE")
    if args.labels:
        if not args.traces:
            raise CliError("--labels needs --traces FILE (the labelled traces as `ragpulse judge` input)")
        if any(getattr(args, k) for k in scope_opts):
            raise CliError("--db, --config, --service, --since and --judge go with --from-reviews")
        labs, traces, judge = from_files(args.labels, args.traces)
        return labs, traces, judge, f"{args.labels} with traces {args.traces}"
    if args.traces:
        raise CliError("--traces goes with --labels")
    labs, traces, judge = _from_store(args)
    return labs, traces, judge, "`ragpulse review`"


def _minimums(args: argparse.Namespace) -> Any:
    from ..judge.local.refit.decision import Minimums

    if args.folds < 3:
        raise CliError("--folds must be at least 3")
    if min(args.min_labels, args.min_each, args.min_answers, args.min_answers_each) < 1:
        raise CliError("the --min-* options must be at least 1")
    return Minimums(args.min_labels, args.min_each, args.min_answers, args.min_answers_each)


def _counts(ls: Any, missing: int) -> str:
    y, gold = ls.labelled.y, ls.gold
    pos, hal, fai = int((y == 1).sum()), int((gold == 1).sum()), int((gold == 0).sum())
    gone = f"; {missing} labelled traces are not in the traces (left out)" if missing else ""
    return (f"{len(y)} claim labels from {len(ls.trace_ids)} traces ({pos} supported, {len(y) - pos} unsupported "
            f"or contradicted), {hal + fai} labelled answers ({fai} faithful, {hal} unfaithful; "
            f"{int(ls.trace_label.sum())} trace labels){gone}")  # fmt: skip


def _parts(ls: Any, minimums: Any, folds: int) -> tuple[dict[str, int], dict[str, int]]:
    """What the claim head and the response rule lack; CliError when the labels fall short of
    any refit (:func:`~ragpulse.collector.judge.local.refit.shortfall`)."""
    from ..judge.local.refit import shortfall

    short = shortfall(ls, minimums, folds)
    if short:
        raise CliError(
            f"too few labels to refit: {_counts(ls, 0)}; {short} (label them in `ragpulse review`)"
        )
    return minimums.head_short(ls.labelled.y), minimums.rule_short(ls.gold)


def _fmt(v: float, signed: bool = False) -> str:
    if math.isnan(v):
        return "     -"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _print_comparison(cmp: Any, curve: list[Any], base_name: str, folds: int) -> None:
    from ..judge.local.refit.promote import METRICS

    print(f"held-out folds: {folds}, grouped by trace (or the labels' group)")
    print(f"  {'decision':<46}{'answer bal.acc':>15}{'claim bal.acc':>14}{'ECE':>7}")
    for name, label in (("base", base_name), ("refit", "refit on these labels")):
        f = cmp.held.figures(name)
        print(f"  {label:<46}{_fmt(f[METRICS[0]]):>15}{_fmt(f[METRICS[1]]):>14}{_fmt(f[METRICS[2]]):>7}")
    for k, r in enumerate(cmp.held.per_fold):
        print(f"    fold {k}: answer {_fmt(r['base_answer'])} -> {_fmt(r['refit_answer'])}   claim "
              f"{_fmt(r['base_claim'])} -> {_fmt(r['refit_claim'])}   ECE {_fmt(r['base_ece'])} -> {_fmt(r['refit_ece'])}")  # fmt: skip
    for metric, g in cmp.gains.items():
        note = " (lower ECE is better; the gain is base minus refit)" if metric == "ECE" else ""
        print(f"  {metric}: gain {_fmt(g.gain, True)}, 95% interval [{_fmt(g.low, True)}, {_fmt(g.high, True)}] "
              f"(bootstrap over groups): {g.verdict}{note}")  # fmt: skip
    print("learning curve (held-out figures of the refit, fit on a share of each fold's labels):")
    print(f"  {'labels':<8}{'answer bal.acc':>15}{'claim bal.acc':>14}{'ECE':>7}")
    for share, f in curve:
        print(f"  {share:>6.0%}  {_fmt(f[METRICS[0]]):>15}{_fmt(f[METRICS[1]]):>14}{_fmt(f[METRICS[2]]):>7}")


def run(args: argparse.Namespace) -> int:
    from ..judge.local.judge import LocalJudge
    from ..judge.local.refit import read_base
    from ..judge.local.refit import run as refit_run
    from ..judge.local.refit.data import read_labels

    minimums = _minimums(args)
    try:
        base = read_base(args.base)
    except (OSError, ValueError, KeyError) as exc:
        raise CliError(f"cannot read the base weights: {exc}") from None
    labs, traces, judge_id, source = _labels(args)
    ls, missing = read_labels(traces, labs, LocalJudge(claim_weights=args.base).model)
    head_short, rule_short = _parts(ls, minimums, args.folds)
    print(f"labels: {_counts(ls, len(missing))}, labels of judge {judge_id or '-'} from {source}")
    parts = [
        p for p, short in (("the claim head", head_short), ("the response rule", rule_short)) if not short
    ]
    kept = [f"{p} kept (it needs {', '.join(f'{n} more {k}' for k, n in s.items())})"
            for p, s in (("the claim head", head_short), ("the response rule", rule_short)) if s]  # fmt: skip
    print(f"refit: {' and '.join(parts)}" + (f"; {kept[0]}" if kept else "")
          + ("; the response rule moves with the refit head" if rule_short else ""))  # fmt: skip
    outcome = refit_run(ls, base, minimums, args.folds)
    cmp = outcome.comparison
    who = f"base {Path(args.base).name}" if args.base else "shipped judge"
    _print_comparison(cmp, outcome.curve, f"{who}: {base.name}", args.folds)
    if not cmp.promote or outcome.fit is None:
        print(f"refused: {cmp.reason}; nothing written")
        return 1
    from ..judge.local.refit import weights_text

    out = Path(args.output)
    out.write_text(weights_text(base, outcome.fit, ls, cmp, judge_id), encoding="utf-8")
    dec = outcome.fit.decision
    print(f"refit: better than the {who} on {cmp.reason}, beyond noise; wrote {out}")
    print(f"  claim threshold {base.decision.head.threshold:g} -> {dec.head.threshold:g}, response rule mean_below "
          f"{base.decision.mean_below:g} -> {dec.mean_below:g}")  # fmt: skip
    print(f"judge id with it: {LocalJudge(claim_weights=str(out)).judge_id} (shipped: {LocalJudge().judge_id}); "
          "configure it as judge.settings.claim_weights, or --claim-weights for ragpulse judge / eval")  # fmt: skip
    sys.stdout.flush()
    return 0
