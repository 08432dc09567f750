"""Parse a ``ragpulse`` command line and run its subcommand, for any set of command modules.

:mod:`.main` runs it over every command; the demo's closing loop runs ``ragpulse eval`` in its
own process through it with the eval command alone (so it needs none of the others, and the
CLI that starts the demo is not imported back). A command module exposes
``register(subparsers)``, which adds its parser and sets ``func``; a command whose own
positional argument rules out sub-actions (``ragpulse judge [INPUT]``) may also expose
``ACTIONS``, (command, action) -> a factory of the action's parser (``ragpulse judge refit``). Errors a user can fix are
:class:`.errors.CliError`: one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from .errors import CliError

__all__ = ["build_parser", "run"]

# litellm (imported by some commands) otherwise fetches its cost map at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def build_parser(modules: Sequence[ModuleType]) -> argparse.ArgumentParser:
    """The ``ragpulse`` parser with the subcommands of ``modules``."""
    parser = argparse.ArgumentParser(
        prog="ragpulse",
        description="Production tracing and claim-level quality monitoring for RAG.",
    )
    parser.add_argument("--version", action="version", version=f"ragpulse {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in modules:
        module.register(subparsers)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragpulse")
    except PackageNotFoundError:
        return "unknown"


def run(modules: Sequence[ModuleType], argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = next(
        (
            factory()
            for m in modules
            for words, factory in getattr(m, "ACTIONS", {}).items()
            if argv[:2] == list(words)
        ),
        None,
    )
    if parser is not None:  # an action of a command that takes a positional argument itself
        argv = argv[2:]
    else:
        parser = build_parser(modules)
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
