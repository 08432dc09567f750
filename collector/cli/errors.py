"""Errors shared by the ``ragpulse`` commands.

A module of its own so that every subcommand can raise it without importing
the parser (:mod:`.main` imports the subcommands).
"""

from __future__ import annotations

__all__ = ["CliError"]


class CliError(Exception):
    """A problem with the user's input, reported as one line and exit status 2."""
