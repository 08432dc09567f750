"""``ragpulse feedback import FILE.jsonl``: load feedback recorded outside the app into rag_feedback."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from .actions import action_parser
from .errors import CliError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    add = action_parser(subparsers, "feedback", "import feedback signals", __doc__)
    imp = add(
        "import",
        "import a JSONL file of feedback (docs/eval-loop.md)",
        _import,
        "storage, sampling, judge, kafka, feedback; --db overrides",
    )
    imp.add_argument("file", help="JSONL, one feedback object per line ('-' for stdin)")
    imp.add_argument("--db", help="chdb:///path, a database directory, or http://user:pass@host:8123/db")
    imp.add_argument(
        "--judging",
        choices=["auto", "here", "kafka", "off"],
        default="auto",
        help="where unjudged traces with negative feedback are judged (rule:feedback): here, with the "
        "config's judge (auto for an embedded database); kafka, the config's judge topic for the "
        "collector's judge workers (auto for a ClickHouse server); off",
    )


def _import(args: argparse.Namespace) -> int:
    from ..core.feedback_spans import is_negative
    from ..feedback.imported import default_judging, import_feedback
    from ..feedback.importer import ImportError_, parse_lines
    from ..storage.clickhouse import StorageUnavailable
    from .export import cli_config, open_storage

    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror}") from None
    try:
        rows = parse_lines(data.splitlines(), time.time_ns())
    except ImportError_ as exc:
        for n, why in exc.problems:
            print(f"{args.file}:{n}: {why}", file=sys.stderr)
        raise CliError(f"{len(exc.problems)} invalid line(s); nothing imported") from None
    config = cli_config(args)
    judging = default_judging(config) if args.judging == "auto" else args.judging
    storage = open_storage(args, must_exist=False)
    try:
        storage.apply_schema()
        _fill_services(storage, rows)
        done = import_feedback(storage, config, rows, judging)
    except StorageUnavailable as exc:
        raise CliError(str(exc).splitlines()[0]) from None
    except (ImportError, ValueError, OSError, RuntimeError) as exc:  # the judge or Kafka, after the rows
        raise CliError(f"feedback stored, but queueing judging failed: {str(exc).splitlines()[0]}") from None
    finally:
        storage.close()
    negative = sum(1 for r in rows if is_negative(r))
    print(f"imported {done.stored} feedback row(s) ({negative} negative) from {args.file}")
    if done.queued:
        where = f"judged here by {done.judged_by}" if judging == "here" else f"sent to {done.judged_by}"
        print(f"queued {len(done.queued)} unjudged trace(s) for judging (rule:feedback): {where}")
    if done.not_stored:
        print(f"{len(done.not_stored)} trace(s) with negative feedback are not stored (yet): not judged")
    return 0


def _fill_services(storage: Any, rows: list[dict[str, Any]]) -> None:
    """Rows without a service take their trace's, when the trace is stored."""
    missing = sorted({r["trace_id"] for r in rows if not r["service"]})
    if not missing:
        return
    found = dict(
        storage.query(
            "SELECT trace_id, any(service) FROM {db}.rag_traces WHERE trace_id IN %(ids)s GROUP BY trace_id",
            {"ids": missing},
        )
    )
    for r in rows:
        if not r["service"]:
            r["service"] = found.get(r["trace_id"], "")
