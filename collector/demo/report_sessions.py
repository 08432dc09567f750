"""The report's sessions: conversations by session id, read from the ``rag_sessions`` views.

Every figure comes from ``rag_sessions`` / ``rag_session_turns`` (docs/schema.md "Sessions"),
which hold the one definition of a flagged turn (failure mode retrieval, generation or both, or
a false refusal, by each turn's latest successful judgment). A flagged turn is followed by a
re-ask, by another turn (continued), or by nothing: the session's last turn, abandoned once the
session has ended, pending while it may still go on. ``ended_before_ns``: sessions whose last
turn is before it have ended (the re-ask window before now, in production); None when the
traffic is over and every session has ended, as after the demo's run. Three conversations are
shown whole: the earliest whose flagged turn was re-asked, abandoned and continued (three
different sessions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SessionTurn", "Conversation", "SessionsSummary", "build_sessions"]

QueryFn = Callable[[str], Sequence[Sequence[Any]]]


@dataclass
class SessionTurn:
    trace_id: str
    query: str
    answer: str
    failure_mode: str  # abstentions as abstain:<kind>; "" when the turn was not judged
    flagged: bool
    reasked: bool


@dataclass
class Conversation:
    service: str
    session_id: str
    outcome: str  # reasked | abandoned | continued: what followed its first flagged turn shown
    turns: list[SessionTurn]


@dataclass
class SessionsSummary:
    sessions: int
    multi_turn: int
    ended: int
    turns: int
    judged_turns: int
    flagged_turns: int
    sessions_flagged: int
    followed_by: dict[str, int]  # reasked, abandoned, continued, pending
    turns_per_session: dict[str, int]  # "1", "2", ... -> sessions
    conversations: list[Conversation] = field(default_factory=list)

    @property
    def flagged_share(self) -> float | None:
        """Flagged turns / judged turns."""
        return self.flagged_turns / self.judged_turns if self.judged_turns else None


def _ended(ended_before_ns: int | None) -> str:
    return "1" if ended_before_ns is None else f"last_time < fromUnixTimestamp64Nano({int(ended_before_ns)})"


def build_sessions(query: QueryFn, database: str, ended_before_ns: int | None = None) -> SessionsSummary:
    """The sessions of the database (see the module docstring)."""
    last_open = "last_turn_flagged AND NOT last_turn_reasked"
    row = query(
        f"SELECT count(), countIf(turns > 1), countIf(ended), sum(turns), sum(judged_turns), sum(flagged_turns), "
        f"countIf(flagged_turns > 0), sum(flagged_reasked), countIf(ended AND {last_open}), "
        f"sum(flagged_turns - flagged_reasked - ({last_open})), countIf(NOT ended AND {last_open}) "
        f"FROM (SELECT *, {_ended(ended_before_ns)} AS ended FROM {database}.rag_sessions)"
    )[0]
    n, multi, ended, turns, judged, flagged, with_flagged, reasked, abandoned, continued, pending = (
        int(v or 0) for v in row
    )
    per = {
        str(t): int(c)
        for t, c in query(f"SELECT turns, count() FROM {database}.rag_sessions GROUP BY turns ORDER BY turns")
    }
    return SessionsSummary(
        n, multi, ended, turns, judged, flagged, with_flagged,
        {"reasked": reasked, "abandoned": abandoned, "continued": continued, "pending": pending},
        per, _conversations(query, database, ended_before_ns),
    )  # fmt: skip


def _conversations(query: QueryFn, database: str, ended_before_ns: int | None) -> list[Conversation]:
    """The earliest session of each outcome of a flagged turn, with all its turns."""
    outcomes = {
        "reasked": "flagged_reasked > 0",
        "abandoned": "ended AND last_turn_flagged AND NOT last_turn_reasked AND turns > 1",
        "continued": "flagged_turns - flagged_reasked - (last_turn_flagged AND NOT last_turn_reasked) > 0",
    }
    out: list[Conversation] = []
    for outcome, cond in outcomes.items():
        shown = ", ".join(_lit(c.session_id) for c in out) or "''"
        rows = query(
            f"SELECT service, session_id FROM (SELECT *, {_ended(ended_before_ns)} AS ended "
            f"FROM {database}.rag_sessions) WHERE {cond} AND session_id NOT IN ({shown}) "
            "ORDER BY first_time, session_id LIMIT 1"
        )
        if not rows:
            continue
        service, session = str(rows[0][0]), str(rows[0][1])
        turns = query(
            f"SELECT trace_id, query, answer, if(abstention_kind = '', failure_mode, "
            f"concat(failure_mode, ':', abstention_kind)), flagged, reasked FROM {database}.rag_session_turns "
            f"WHERE service = {_lit(service)} AND session_id = {_lit(session)} ORDER BY time, trace_id"
        )
        out.append(
            Conversation(service, session, outcome,
                         [SessionTurn(str(t), str(q), str(a), str(fm or ""), bool(f), bool(r))
                          for t, q, a, fm, f, r in turns])
        )  # fmt: skip
    return out


def _lit(s: str) -> str:
    """A ClickHouse string literal."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
