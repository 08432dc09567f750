"""Errors shared by the ``ragpulse`` commands.

Kept apart from ``cli.py`` so that ``python -m ragpulse.collector.cli`` (which
runs cli.py as ``__main__``) and the commands it loads agree on one class.
"""

from __future__ import annotations

__all__ = ["CliError"]


class CliError(Exception):
    """A problem with the user's input, reported as one line and exit status 2."""
