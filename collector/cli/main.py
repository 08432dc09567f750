"""The ``ragpulse`` command line.

Each subcommand lives in its own module that exposes
``register(subparsers: argparse._SubParsersAction) -> None``; the module adds
its parser and sets ``func`` (a callable taking the parsed args and returning
an exit code). Add a module to ``COMMAND_MODULES`` to add a command.
``python -m ragpulse.collector.cli`` runs :func:`main` (``__main__.py``).

Errors a user can fix (bad input, missing files, a database in use) are raised
as :class:`CliError` and printed as one line on stderr with exit status 2
(:mod:`.dispatch`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import (
    calibrate,
    collect,
    compare,
    dashboards,
    demo,
    dispatch,
    evaluate,
    export,
    feedback,
    judge,
    rejudge,
    review,
    schema,
)
from .errors import CliError

__all__ = ["CliError", "COMMAND_MODULES", "build_parser", "main"]

COMMAND_MODULES = (
    judge,
    calibrate,
    collect,
    schema,
    demo,
    evaluate,
    compare,
    dashboards,
    export,
    feedback,
    review,
    rejudge,
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``ragpulse`` command."""
    return dispatch.build_parser(COMMAND_MODULES)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ragpulse`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    return dispatch.run(COMMAND_MODULES, argv)
