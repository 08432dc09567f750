"""``ragpulse schema apply``: create the ClickHouse database and tables (idempotent)."""

from __future__ import annotations

import argparse
from typing import Any

from .actions import action_parser

__all__ = ["register"]


def _apply(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_config
    from ..storage.clickhouse import Storage, schema_statements
    from .errors import CliError, storage_errors

    overrides: dict[str, Any] = {"storage": {}}
    if args.dsn:
        overrides["storage"]["dsn"] = args.dsn
    if args.ttl_days is not None:
        overrides["storage"]["ttl_days"] = args.ttl_days
    try:
        cfg = load_config(args.config, overrides=overrides)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    st = cfg["storage"]
    if args.print_only:
        for stmt in schema_statements(st["database"], st["ttl_days"]):
            print(stmt + ";\n")
        return 0
    storage = Storage(st["dsn"], st["database"], st["ttl_days"])
    with storage_errors(storage):
        statements = storage.apply_schema()
    print(f"schema applied to {storage._safe_dsn()} database {st['database']}: {len(statements)} statements")
    return 0


def register(subparsers: Any) -> None:
    add = action_parser(subparsers, "schema", "manage the ClickHouse schema", __doc__)
    apply = add("apply", "create the database and tables if they do not exist", _apply, "storage section")
    apply.add_argument("--dsn", help="chdb:///path or http://user:pass@host:8123 (overrides the config)")
    apply.add_argument("--ttl-days", type=int, help="row TTL in days (0 = none; overrides the config)")
    apply.add_argument(
        "--print", action="store_true", dest="print_only", help="print the DDL instead of applying it"
    )
