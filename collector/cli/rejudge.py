"""``ragpulse rejudge``: judge stored history again under a new judge id, before promoting it.

``ragpulse rejudge --since 7d --claim-weights weights.json`` (or ``--judge SPEC``) judges
the traces the base judge (``--from``, default the judge with the most judgments) judged in
the window again with the new judge and stores the rows under the new judge's id in
``rag_judgments`` and ``rag_claims``; the old id's rows stay. A trace with a row under the
new id is not judged again, so a second run adds nothing and an interrupted run (Ctrl-C, a
crash, ``--limit``) resumes where it stopped. At most ``--limit`` traces per run (default
10,000); it says how many are left. Then it prints ``ragpulse judge diff --from OLD --to
NEW``: how scores, flag rates and verdicts move between the two ids on the same traces.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .errors import CliError, storage_errors
from .export import open_storage
from .judge_diff import add_window_options, print_diff, since_ns
from .judge_options import add_judge_options, build_judge

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "rejudge",
        help="judge stored traces again under a new judge id (before promoting it)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_window_options(p)
    p.add_argument(
        "--from", dest="base", help="the judge id whose traces to judge again (default: the busiest)"
    )
    add_judge_options(p)
    p.add_argument(
        "--limit", type=int, default=10_000, help="at most this many traces in this run (default 10000)"
    )
    p.add_argument(
        "--retry-errors", action="store_true", help="judge again the traces the new judge stored an error for"
    )
    p.add_argument("--json", action="store_true", help="print the outcome and the diff as JSON")
    p.set_defaults(func=run)


def _progress_bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="trace", desc="ragpulse rejudge", file=sys.stderr, mininterval=1.0)


def run(args: argparse.Namespace) -> int:
    from ..rejudge.diff import DiffScope, judge_diff
    from ..rejudge.run import RejudgeScope, base_judge, pending_count, rejudge

    if args.limit < 1:
        raise CliError("--limit must be at least 1")
    start = since_ns(args)
    judge = build_judge(args)
    storage = open_storage(args)
    with storage_errors(storage, ValueError):
        storage.apply_schema()
        base = args.base or base_judge(storage, args.service, start)
        if base is None:
            raise CliError(
                "no judged traces in the store" + (f" of service {args.service!r}" if args.service else "")
            )
        if base == judge.judge_id:
            raise CliError(
                f"{judge.judge_id} is the judge that scored these traces: give the new judge "
                "(--claim-weights FILE, --judge SPEC) or another --from"
            )
        scope = RejudgeScope(base, judge.judge_id, args.service, start, args.retry_errors)
        todo = min(pending_count(storage, scope), args.limit)
        print(f"ragpulse rejudge: {todo} traces of {base} to judge as {judge.judge_id}", file=sys.stderr)
        bar = _progress_bar(todo) if todo else None
        try:
            outcome = rejudge(storage, judge, scope, args.limit, progress=bar.update if bar else None)
        finally:
            if bar is not None:
                bar.close()
            close = getattr(judge, "close", None)
            if close is not None:
                close()
        diff = judge_diff(storage, DiffScope(base, judge.judge_id, args.service, start))
    summary = {"from": base, "to": judge.judge_id, **vars(outcome)}
    if args.json:
        print(json.dumps({"rejudge": summary, "diff": diff}, indent=2))
        return 0
    more = f"; {outcome.left} left: run it again to go on" if outcome.left else "; none left"
    print(
        f"rejudged {outcome.judged} traces as {judge.judge_id} ({outcome.errors} errors){more}",
        file=sys.stdout,
    )
    print_diff(diff)
    return 0
