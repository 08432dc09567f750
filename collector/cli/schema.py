"""``ragpulse schema apply``: create the ClickHouse database and tables (idempotent)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("schema", help="manage the ClickHouse schema", description=__doc__)
    sub = parser.add_subparsers(dest="schema_command", metavar="ACTION")
    apply = sub.add_parser("apply", help="create the database and tables if they do not exist")
    apply.add_argument("--config", help="collector YAML config (storage section)")
    apply.add_argument("--dsn", help="chdb:///path or http://user:pass@host:8123 (overrides the config)")
    apply.add_argument("--ttl-days", type=int, help="row TTL in days (0 = none; overrides the config)")
    apply.add_argument(
        "--print", action="store_true", dest="print_only", help="print the DDL instead of applying it"
    )
    apply.set_defaults(func=_apply)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _apply(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_config
    from ..storage.clickhouse import Storage, StorageUnavailable, schema_statements
    from .errors import CliError

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
    try:
        statements = storage.apply_schema()
    except StorageUnavailable as exc:
        raise CliError(str(exc).splitlines()[0]) from None
    finally:
        storage.close()
    print(f"schema applied to {storage._safe_dsn()} database {st['database']}: {len(statements)} statements")
    return 0
