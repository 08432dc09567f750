"""The judgments a re-judging command reads: those without an error, of one service, from a start.

``ragpulse rejudge`` (its base judge and the traces still to judge) and ``ragpulse judge diff``
(the traces both judges judged) filter ``rag_judgments`` rows the same way, and both compare an
old judge id with a new one over such a scope (:class:`JudgeScope`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["JudgeScope", "judgment_filter"]


def judgment_filter(service: str | None, since_ns: int | None) -> tuple[list[str], dict[str, Any]]:
    """(conditions, query parameters) on ``rag_judgments`` rows: judged without an error, of
    ``service`` when given, with a trace time from ``since_ns`` (ns since the epoch) when given."""
    cond: list[str] = ["error = ''"]
    params: dict[str, Any] = {}
    if service:
        cond.append("service = %(service)s")
        params["service"] = service
    if since_ns is not None:
        cond.append("time >= fromUnixTimestamp64Nano(%(since)s)")
        params["since"] = int(since_ns)
    return cond, params


@dataclass(frozen=True)
class JudgeScope:
    """An old judge id, a new one, and which of their judgments count: optionally one service and
    a start (trace time, ns since the epoch)."""

    from_id: str
    to_id: str
    service: str | None = None
    since_ns: int | None = None

    def judgment_filter(self) -> tuple[list[str], dict[str, Any]]:
        """:func:`judgment_filter` of this scope's service and start."""
        return judgment_filter(self.service, self.since_ns)
