"""The ``ragpulse`` command line.

Each subcommand lives in its own module that exposes
``register(subparsers: argparse._SubParsersAction) -> None``; the module adds
its parser and sets ``func`` (a callable taking the parsed args and returning
an exit code). Add a module to ``COMMAND_MODULES`` to add a command.
``python -m ragpulse.collector.cli`` runs :func:`main` (``__main__.py``).

Errors a user can fix (bad input, missing files, a database in use) are raised
as :class:`CliError` and printed as one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import calibrate, collect, compare, dashboards, demo, evaluate, export, feedback, judge, schema
from .errors import CliError

__all__ = ["CliError", "COMMAND_MODULES", "build_parser", "main"]

# litellm (imported by some commands) otherwise fetches its cost map at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

COMMAND_MODULES = (judge, calibrate, collect, schema, demo, evaluate, compare, dashboards, export, feedback)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragpulse",
        description="Production tracing and claim-level quality monitoring for RAG.",
    )
    parser.add_argument("--version", action="version", version=f"ragpulse {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragpulse")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"ragpulse {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ragpulse {args.command}: interrupted", file=sys.stderr)
        return 130
