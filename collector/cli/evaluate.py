"""``ragpulse eval``: evaluate a run (or a replayed app) on an eval set, report, and gate.

Exit status: 0 when every gate passes (or none is given), 1 when a gate
fails (one line per failing gate on stderr), 2 for bad input. The eval's
modules (numpy, scipy, jsonschema: the ``eval`` extra) load only when the
command runs, so ``ragpulse --help`` works in an install without them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .errors import CliError
from .judge_options import add_judge_options, build_judge

__all__ = ["register", "run", "default_cache_path"]


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/ragpulse/eval-judgments.sqlite`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragpulse" / "eval-judgments.sqlite"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate a run on an eval set (gold claims, slices, paired CIs, gates)",
        description="Offline evaluation: claim-level retrieval and generation metrics against gold "
        "claims, slices, a paired bootstrap comparison with a baseline, and regression gates.",
    )
    p.add_argument("evalset", help="eval-set JSONL (docs/evalset.schema.json)")
    p.add_argument("run", nargs="?", help="run JSONL: judge input records with case_id (omit with --app)")
    p.add_argument("--baseline", metavar="RUN0.jsonl", help="baseline run for the paired comparison")
    add_judge_options(p)
    p.add_argument(
        "--slice", action="append", default=[], metavar="FIELD", help="extra slice field (repeatable)"
    )
    p.add_argument("--gate", metavar="FILE", help="YAML gate file; a failing gate exits 1")
    p.add_argument("-o", "--output", metavar="REPORT.html", help="write the HTML report")
    p.add_argument("--json", metavar="OUT.json", help="write the full result as JSON")
    p.add_argument("--app", metavar="MODULE:FUNCTION", help="replay: call this RAG function on every case")
    p.add_argument(
        "--corpus-from-snapshot", action="store_true", help="replay: pass each case's frozen chunks"
    )
    p.add_argument(
        "--sweep-position", action="store_true", help="replay: move the gold evidence through the context"
    )
    p.add_argument(
        "--save-run", metavar="RUN.jsonl", help="replay: write the replayed run (a later --baseline)"
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument(
        "--cache", metavar="PATH", default=None, help=f"judgment cache (default {default_cache_path()})"
    )
    p.add_argument("--no-cache", action="store_true", help="judge everything afresh, store nothing")
    p.add_argument("-q", "--quiet", action="store_true", help="no terminal report (gate lines still print)")
    p.set_defaults(func=run)


def _judge(args: argparse.Namespace) -> Any:
    from ..eval.cache import CachedJudge, JudgmentStore

    inner = build_judge(args)
    store = None if args.no_cache else JudgmentStore(args.cache or default_cache_path())
    return CachedJudge(inner, store)


def _progress(msg: str) -> None:
    print(f"ragpulse eval: {msg}", file=sys.stderr, flush=True)


def _replay(args: argparse.Namespace, cases: list[dict[str, Any]]) -> tuple[Any, dict[str, dict[str, Any]]]:
    from ..eval.files import EvalInputError, write_jsonl
    from ..eval.replay import Replayer, accepts_chunks, load_app

    fn = load_app(args.app)
    if args.sweep_position and not accepts_chunks(fn):
        raise EvalInputError("--sweep-position: the app does not accept a 'chunks' argument")
    replayer = Replayer(fn, corpus_from_snapshot=args.corpus_from_snapshot)
    run = replayer.run(cases, progress=_progress)
    if args.save_run:
        write_jsonl(args.save_run, run.values())
    return replayer, run


def _evaluate(args: argparse.Namespace, judge: Any) -> dict[str, Any]:
    from ..eval.evaluate import evaluate
    from ..eval.files import EvalInputError, load_evalset, load_run, without_rejected

    every = load_evalset(args.evalset)
    cases, rejected = without_rejected(every)
    if rejected:
        print(
            f"ragpulse eval: skipping {rejected} rejected case(s) (review.status: rejected)", file=sys.stderr
        )
    ids = [c["id"] for c in every]  # a run file may still hold records of rejected cases
    if bool(args.app) == bool(args.run):
        raise EvalInputError("give either a RUN file or --app MODULE:FUNCTION")
    if (args.sweep_position or args.corpus_from_snapshot or args.save_run) and not args.app:
        raise EvalInputError("--sweep-position, --corpus-from-snapshot and --save-run need --app")
    baseline = load_run(args.baseline, ids) if args.baseline else None
    replayer = None
    if args.app:
        replayer, run = _replay(args, cases)
    else:
        run = load_run(args.run, ids)
    kept = {c["id"] for c in cases}
    run = {k: v for k, v in run.items() if k in kept}
    if baseline is not None:
        baseline = {k: v for k, v in baseline.items() if k in kept}
    try:
        doc = evaluate(
            judge, cases, run, baseline=baseline, slices=args.slice, seed=args.seed,
            n_resamples=args.resamples, progress=_progress,
        )  # fmt: skip
        if args.sweep_position:
            from ..eval.position import position_sweep

            doc["position_sweep"] = position_sweep(
                replayer, judge, cases, doc["settings"]["slices"], _progress
            )
    finally:
        if replayer is not None:
            replayer.close()
    doc["skipped_rejected"] = rejected
    doc["judge_calls"] = {"judged": judge.misses, "cached": judge.hits, "cost_usd": round(judge.cost_usd, 6)}
    return doc


def run(args: argparse.Namespace) -> int:
    try:
        from ..eval.evaluate import evaluate  # noqa: F401 - numpy and scipy, checked before any work
        from ..eval.files import EvalInputError
        from ..eval.gate import check_gates, load_gates
        from ..eval.report_html import write_html
        from ..eval.report_text import render_text
    except ImportError as exc:
        raise CliError(f"needs the eval extra ({exc.name} is missing): pip install 'ragpulse[eval]'") from exc

    try:
        gates = load_gates(args.gate) if args.gate else []
        judge = _judge(args)
        try:
            doc = _evaluate(args, judge)
        finally:
            judge.close()
    except EvalInputError as exc:
        raise CliError(str(exc)) from exc
    if args.json:
        Path(args.json).write_text(
            json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False), encoding="utf-8"
        )
    if args.output:
        write_html(doc, args.output)
    if not args.quiet:
        print(render_text(doc))
    failed = [r for r in check_gates(gates, doc) if not r.passed]
    for r in failed:
        print(f"GATE FAILED {r.message}", file=sys.stderr)
    if gates and not failed and not args.quiet:
        print(f"all {len(gates)} gate(s) passed")
    return 1 if failed else 0
