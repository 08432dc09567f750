"""Log a kind of problem the first time it happens; the agent counts every later one in ``stats()``.

An error that repeats on every span must not flood the application's log, and must not be
silent either: the first one is logged (with its traceback where there is one), the rest are
only counted by the caller.
"""

from __future__ import annotations

__all__ = ["Once"]


class Once:
    """``once(kind)`` is True the first time it sees ``kind``, False after that."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def __call__(self, kind: str) -> bool:
        if kind in self._seen:
            return False
        self._seen.add(kind)
        return True
