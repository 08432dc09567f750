"""What the session figures read from the store: the ``rag_sessions`` and ``rag_session_turns`` views.

The views (storage/sql/schema.sql, docs/schema.md "Sessions") hold the one definition of a
flagged turn and the per-session counts; this module only chooses which sessions to read. A
session *ends* once no turn followed its last one within the re-ask window
(``feedback.reask.window_s``): only then is a flagged last turn an abandonment, since before
it the user may still ask again. Every flagged turn of an ended session is followed by exactly
one of: a re-ask (``reasked``), the end of the session (``abandoned``) or another turn that is
no re-ask (``continued``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..storage.clickhouse import Storage

__all__ = ["FOLLOWED_BY", "SessionFigures", "SessionStore", "Turn"]

#: What followed a flagged turn of an ended session (``then`` label of the metrics).
FOLLOWED_BY = ("reasked", "abandoned", "continued")

_COLUMNS = (
    "service, session_id, toUnixTimestamp64Nano(first_time), toUnixTimestamp64Nano(last_time), "
    "turns, judged_turns, flagged_turns, flagged_reasked, last_turn_flagged, last_turn_reasked"
)
# Sessions with a turn in [lo, hi) whose last turn is in [lo, hi): the IN list is read from the
# time-indexed traces, and the views filter their traces by it before joining and aggregating.
_ENDED = (
    f"SELECT {_COLUMNS} FROM {{db}}.rag_sessions WHERE session_id IN "
    "(SELECT session_id FROM {db}.rag_traces WHERE session_id != '' "
    "AND time >= fromUnixTimestamp64Nano(%(lo)s) AND time < fromUnixTimestamp64Nano(%(hi)s)) "
    "AND last_time >= fromUnixTimestamp64Nano(%(lo)s) AND last_time < fromUnixTimestamp64Nano(%(hi)s) "
    "ORDER BY service, session_id"
)
_ACTIVE = (
    "SELECT service, uniqExact(session_id) FROM {db}.rag_traces FINAL "
    "WHERE session_id != '' AND time >= fromUnixTimestamp64Nano(%(since)s) GROUP BY service"
)
_TURNS = (
    "SELECT trace_id, toUnixTimestamp64Nano(time), query, answer, judged, failure_mode, abstention_kind, "
    "flagged, reasked FROM {db}.rag_session_turns "
    "WHERE service = %(service)s AND session_id = %(session)s ORDER BY time, trace_id"
)
_SESSION_OF = "SELECT service, session_id FROM {db}.rag_traces FINAL WHERE trace_id = %(trace)s LIMIT 1"


@dataclass(frozen=True)
class SessionFigures:
    """One session's row of ``rag_sessions`` (times in ns since the epoch)."""

    service: str
    session_id: str
    first_ns: int
    last_ns: int
    turns: int
    judged_turns: int
    flagged_turns: int
    flagged_reasked: int
    last_turn_flagged: bool
    last_turn_reasked: bool

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> SessionFigures:
        svc, sid, first, last, turns, judged, flagged, reasked, last_flagged, last_reasked = row
        return cls(str(svc), str(sid), int(first), int(last), int(turns), int(judged), int(flagged),
                   int(reasked), bool(last_flagged), bool(last_reasked))  # fmt: skip

    @property
    def abandoned(self) -> bool:
        """The last turn is flagged and no re-ask followed it (meaningful once the session ended)."""
        return self.last_turn_flagged and not self.last_turn_reasked

    def followed_by(self) -> dict[str, int]:
        """The flagged turns by what followed each (:data:`FOLLOWED_BY`), for an ended session."""
        abandoned = int(self.abandoned)
        return {
            "reasked": self.flagged_reasked,
            "abandoned": abandoned,
            "continued": self.flagged_turns - self.flagged_reasked - abandoned,
        }


@dataclass(frozen=True)
class Turn:
    """One turn of a session as ``rag_session_turns`` has it."""

    trace_id: str
    time_ns: int
    query: str
    answer: str
    judged: bool
    failure_mode: str
    abstention_kind: str
    flagged: bool
    reasked: bool


class SessionStore:
    """The session queries over one :class:`Storage`."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def ended(self, lo_ns: int, hi_ns: int) -> list[SessionFigures]:
        """Sessions whose last turn is in ``[lo_ns, hi_ns)``; the caller chooses ``hi_ns`` at least
        the re-ask window before now, so each of them has ended."""
        rows = self.storage.query(_ENDED, {"lo": int(lo_ns), "hi": int(hi_ns)})
        return [SessionFigures.from_row(r) for r in rows]

    def active(self, since_ns: int) -> dict[str, int]:
        """Sessions per service with a turn at or after ``since_ns``."""
        return {str(s): int(n) for s, n in self.storage.query(_ACTIVE, {"since": int(since_ns)})}

    def turns(self, service: str, session_id: str) -> list[Turn]:
        """Every turn of one session, oldest first."""
        rows = self.storage.query(_TURNS, {"service": service, "session": session_id})
        return [
            Turn(str(t), int(ns), str(q), str(a), bool(j), str(fm), str(ak), bool(f), bool(r))
            for t, ns, q, a, j, fm, ak, f, r in rows
        ]

    def session_of(self, trace_id: str) -> tuple[str, str] | None:
        """(service, session id) of a stored trace, None without one."""
        rows = self.storage.query(_SESSION_OF, {"trace": trace_id})
        if not rows or not rows[0][1]:
            return None
        return str(rows[0][0]), str(rows[0][1])
