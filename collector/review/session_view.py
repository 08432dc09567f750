"""The conversation shown above the turn being labelled: what the user said before, and the session.

A follow-up ("and can we delete them sooner?") is judged, and must be labelled, in the light of
the conversation before it. The judgments page shows two things for a trace:

- the conversation the application recorded with the turn (``rag_traces.conversation_*``: the
  messages before it, exactly what the judge read), and
- when the trace has a session id, every turn of its session as the store has it
  (``rag_session_turns``, docs/schema.md "Sessions"): each turn's question and answer, its
  latest verdict, whether it is flagged and whether the user re-asked it, the labelled turn
  marked, so a reviewer sees what came after too (a re-ask, the user leaving).

The eval-case page shows the case's ``provenance.conversation``. Everything is rendered by
the templates with autoescaping on; nothing here builds HTML.
"""

from __future__ import annotations

from typing import Any

from ..sessions.store import SessionStore
from ..storage.clickhouse import Storage

__all__ = ["session_view"]

_RECORDED = "SELECT conversation_roles, conversation_contents FROM {db}.rag_traces FINAL WHERE trace_id = %(t)s LIMIT 1"


def session_view(storage: Storage, trace_id: str) -> dict[str, Any]:
    """``{"conversation": [{role, content}], "session_id": str | None, "service": str | None,
    "turns": [{trace_id, query, answer, verdict, flagged, reasked, current, position}]}``."""
    rows = storage.query(_RECORDED, {"t": trace_id})
    conversation = (
        [{"role": str(r), "content": str(c)} for r, c in zip(rows[0][0], rows[0][1], strict=False)]
        if rows
        else []
    )
    sessions = SessionStore(storage)
    found = sessions.session_of(trace_id)
    if found is None:
        return {"conversation": conversation, "session_id": None, "service": None, "turns": []}
    service, session_id = found
    turns = [
        {
            "trace_id": t.trace_id, "query": t.query, "answer": t.answer, "position": k,
            "verdict": (f"{t.failure_mode} ({t.abstention_kind})" if t.abstention_kind else t.failure_mode)
            if t.judged else "not judged",
            "flagged": t.flagged, "reasked": t.reasked, "current": t.trace_id == trace_id,
        }
        for k, t in enumerate(sessions.turns(service, session_id), 1)
    ]  # fmt: skip
    return {"conversation": conversation, "session_id": session_id, "service": service, "turns": turns}
