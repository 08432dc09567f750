"""Errors shared by the ``ragpulse`` commands.

A module of its own so that every subcommand can raise it without importing
the parser (:mod:`.main` imports the subcommands).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["CliError", "storage_errors"]


class CliError(Exception):
    """A problem with the user's input, reported as one line and exit status 2."""


@contextmanager
def storage_errors(storage: Any, *errors: type[Exception]) -> Iterator[None]:
    """A command's work on ``storage``, which is closed whatever happens: storage being
    unavailable becomes a CliError of the first line of its message (the rest is the driver's
    detail), each of ``errors`` a CliError of its message."""
    from ..storage.clickhouse import StorageUnavailable

    try:
        yield
    except StorageUnavailable as exc:
        raise CliError(str(exc).splitlines()[0]) from None
    except errors as exc:
        raise CliError(str(exc)) from None
    finally:
        storage.close()
