"""``ragpulse export``: failing production cases from ClickHouse into the eval set (docs/eval-loop.md)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import CliError, storage_errors

__all__ = ["register", "parse_time", "cli_config", "open_storage"]

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(text: str, now_ns: int) -> int:
    """``7d`` / ``36h`` (before now), an ISO 8601 time (UTC unless it says otherwise), or ``now``."""
    text = text.strip()
    if text == "now":
        return now_ns
    m = _RELATIVE.match(text)
    if m:
        return now_ns - int(float(m.group(1)) * _UNIT_S[m.group(2)] * 1_000_000_000)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(f"cannot read time {text!r}: use 7d, 24h, now or an ISO time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1_000_000) * 1000


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("export", help="export failing cases into the eval set", description=__doc__)
    p.add_argument("-o", "--output", required=True, help="eval-set JSONL to create or append to")
    p.add_argument("--since", default="7d", help="window start: 7d, 24h or an ISO time (default 7d)")
    p.add_argument("--until", default="now", help="window end (exclusive; default now)")
    p.add_argument("--criteria", help="YAML/JSON file overriding the default criteria")
    p.add_argument("--holdout", type=float, default=0.0, help="fraction of new cases put in split holdout")
    p.add_argument("--max-per-reason", type=int, help="at most N new cases per reason (stratified)")
    p.add_argument("--db", help="chdb:///path, a database directory, or http://user:pass@host:8123/db")
    p.add_argument("--config", help="collector YAML config (its storage section; --db overrides)")
    p.add_argument("--dry-run", action="store_true", help="write the file but record nothing in rag_exports")
    p.add_argument("--schedule", choices=["weekly"], help="export every completed week since the last run")
    p.add_argument("--state", help="directory of the schedule's state (with --schedule)")
    p.set_defaults(func=_run)


def cli_config(args: argparse.Namespace) -> dict[str, Any]:
    """The collector config of ``--config`` with ``--db`` as its storage DSN (a directory becomes
    ``chdb://``); a CliError in one line when it is invalid."""
    from ..config import ConfigError, load_config

    dsn = args.db
    if dsn and "://" not in dsn:
        dsn = f"chdb://{Path(dsn).resolve()}"
    try:
        return load_config(args.config, overrides={"storage": {"dsn": dsn}} if dsn else None)
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def open_storage(args: argparse.Namespace, must_exist: bool = True) -> Any:
    """The Storage of ``--db``/``--config``; a CliError in one line when an embedded database is
    missing or owned by another process."""
    from ..storage.clickhouse import Storage

    st = cli_config(args)["storage"]
    if st["dsn"].startswith("chdb://"):
        from ..demo.runner import _check_database  # one check for every command opening chDB

        path = Path(st["dsn"][len("chdb://") :])
        if must_exist and not path.exists():
            raise CliError(f"no database at {path}")
        if path.exists():
            _check_database(path)
    return Storage(st["dsn"], st["database"], st["ttl_days"])


def _options(args: argparse.Namespace, since_ns: int, until_ns: int) -> Any:
    from ..export.criteria import load_criteria
    from ..export.run import ExportOptions

    if not 0.0 <= args.holdout < 1.0:
        raise CliError("--holdout must be within [0, 1)")
    if args.max_per_reason is not None and args.max_per_reason < 1:
        raise CliError("--max-per-reason must be at least 1")
    if since_ns >= until_ns:
        raise CliError("--since must be before --until")
    try:
        criteria = load_criteria(args.criteria)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return ExportOptions(
        Path(args.output), since_ns, until_ns, criteria, args.holdout, args.max_per_reason, args.dry_run
    )


def _run(args: argparse.Namespace) -> int:
    from ..export.run import run_export
    from ..export.schedule import run_scheduled

    if bool(args.schedule) != bool(args.state):
        raise CliError("--schedule and --state go together")
    now = time.time_ns()
    if not args.schedule:
        _options(args, parse_time(args.since, now), parse_time(args.until, now))  # validate before opening
    storage = open_storage(args)

    def once(since_ns: int, until_ns: int) -> str:
        print(f"exporting {_iso(since_ns)} .. {_iso(until_ns)} ...", file=sys.stderr)
        summary = run_export(storage, _options(args, since_ns, until_ns))
        for line in summary.lines():
            print(line)
        print(f"wrote {args.output} and {summary.manifest}")
        return summary.run_id

    with storage_errors(storage, ValueError):
        storage.apply_schema()
        if args.schedule:
            runs = run_scheduled(Path(args.state), now, once)
            if not runs:
                print("no completed week to export since the last run")
        else:
            once(parse_time(args.since, now), parse_time(args.until, now))
    return 0


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
