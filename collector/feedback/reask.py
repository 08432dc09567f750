"""Implicit feedback: a user asking the same question again soon after is unhappy with the answer.

A re-ask is a trace whose ``session.id`` matches an earlier trace's, within
``window_s`` of it, with a near-duplicate query (character-shingle Jaccard
similarity at least ``threshold`` (0.7) after normalisation, collector/core/text.py),
compared with the session's latest ``_LOOKBACK`` earlier calls. It becomes one
implicit negative feedback row on the *earlier* trace (kind ``reask``, source
``implicit``), keyed by the later trace's id so a replay writes the same row
again. Configured by the ``feedback.reask`` section; ``enabled: false`` turns
it off.

The earlier calls come from an in-memory index of the calls this process
assembled: ``ragpulse_native.ReaskIndex`` (native/src/reask.rs) when the native
module is in use, else :class:`~.sessions.SessionIndex`, the Python reference
it is tested against (tests/test_reask_native.py: the same re-asks, calls held
and evictions on random streams). When the native index fails (a contained
panic: collector/core/native.py), it is left empty and the batch is answered
by a Python index holding the stored calls of its sessions, as after a
restart; the native index reloads them on the next batch. Storage is read only where memory cannot
know: once when the index starts (or restarts) holding every call, for the
calls stored before this process (one query over the window), and on every
batch while other collectors may store calls of the same sessions (a Kafka
consumer that owns only some of the topic's partitions: a session's calls are
spread over partitions by trace id).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..core.native import native_function, with_fallback
from ..core.text import normalize_query
from ..storage.clickhouse import Storage
from .sessions import SessionIndex

__all__ = ["Call", "ReaskDetector"]


class Call(NamedTuple):
    """What re-ask detection needs of a trace (taken before the trace's objects are freed)."""

    trace_id: str
    session_id: str
    time: int
    query: str
    service: str


_NS = 1_000_000_000
_LOOKBACK = 20  # earlier calls of a session compared with each new one
_STORED_SQL = (
    "SELECT trace_id, session_id, toUnixTimestamp64Nano(time), query, service "
    "FROM {db}.rag_traces WHERE session_id {sessions} "
    "AND time >= fromUnixTimestamp64Nano(%(lo)s) AND time <= fromUnixTimestamp64Nano(%(hi)s) "
    "ORDER BY time DESC, trace_id DESC LIMIT %(k)s BY session_id LIMIT %(n)s"
)


class ReaskDetector:
    """Finds re-asks among newly assembled traces (see the module docstring).

    ``local`` says whether this process assembles every call of the sessions it
    sees (the embedded collector, a Kafka consumer owning the whole topic); the
    Kafka loop sets it on each rebalance. While it is False each batch also reads
    the stored calls of its sessions.
    """

    def __init__(
        self, storage: Storage, section: Mapping[str, Any] | None = None, native: bool | None = None
    ) -> None:
        """``native``: hold and match calls with ``ragpulse_native.ReaskIndex`` (same results, a
        fraction of the cost); None: when the native module is in use, False: never, True: always."""
        section = dict(section or {})
        self.storage = storage
        self.enabled = bool(section.get("enabled", True))
        self.window_ns = int(float(section.get("window_s", 300)) * _NS)
        self.threshold = float(section.get("threshold", 0.7))
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError("feedback.reask.threshold must be within (0, 1]")
        self.max_calls = int(section.get("max_calls", 100_000))
        native_index = native_function("ReaskIndex") if native is not False else None
        if native and native_index is None:
            raise ValueError("ragpulse_native is not in use: the native re-ask index is not available")
        self.index: Any = (
            native_index(self.window_ns, _LOOKBACK, self.max_calls, normalize_query)
            if native_index is not None
            else SessionIndex(self.window_ns, _LOOKBACK, self.max_calls)
        )
        self.native = native_index is not None
        # The re-asks of a batch: from the index, a native failure answered by the stored calls.
        self._found = with_fallback("ReaskIndex", self._held, self._reloaded) if self.native else self._held
        self.local = True
        self._loaded = False  # the index holds the calls stored before it (set while local)

    def _stored(self, traces: Sequence[Call], sessions: Sequence[str] | None) -> list[Call]:
        """Stored calls in the batch's window, the latest ``_LOOKBACK`` per session (of ``sessions``,
        or of all), oldest first. No FINAL, cheaper: a replayed row repeats a trace id, which the
        index keeps once."""
        low = min(t.time for t in traces) - self.window_ns
        high = max(t.time for t in traces)
        where = "IN %(s)s" if sessions is not None else "!= ''"
        params = {"s": list(sessions or ()), "lo": low, "hi": high, "k": _LOOKBACK, "n": self.max_calls}
        rows = self.storage.query(_STORED_SQL.replace("{sessions}", where), params)
        calls = [Call(str(tid), str(sid), int(ns), str(q), str(svc)) for tid, sid, ns, q, svc in rows]
        calls.reverse()  # the query reads newest first; the index keeps the latest
        return calls

    def detect(self, traces: Sequence[Call]) -> list[dict[str, Any]]:
        """Feedback rows (``rag_feedback`` columns) for the re-asks among ``traces``."""
        with_session = [t for t in traces if t.session_id and t.query]
        if not self.enabled or not with_session:
            return []
        ordered = sorted(with_session, key=lambda x: (x.time, x.trace_id))
        found = self._found(ordered)
        return [_row(trace_id, service, ordered[k]) for k, trace_id, service in found]

    def _held(self, ordered: list[Call]) -> list[tuple[int, Any, Any]]:
        """The re-asks among ``ordered`` (in time order) that the index finds, holding them."""
        if not self.local:
            self.index.add_calls(self._stored(ordered, sorted({t.session_id for t in ordered})))
            self._loaded = False  # other collectors' calls: read again when this one owns them all
        elif not self._loaded:
            self.index.add_calls(self._stored(ordered, None))
            self._loaded = True
        return self.index.detect(ordered, self.threshold)

    def _reloaded(self, ordered: list[Call]) -> list[tuple[int, Any, Any]]:
        """The re-asks among ``ordered`` that a Python index holding the stored calls of their
        sessions finds: the reference after the native index failed (a panic leaves it empty),
        which reloads the stored calls on the next batch."""
        self._loaded = False
        index = SessionIndex(self.window_ns, _LOOKBACK, self.max_calls)
        index.add_calls(self._stored(ordered, sorted({t.session_id for t in ordered})))
        return index.detect(ordered, self.threshold)


def _row(trace_id: str, service: str, later: Call) -> dict[str, Any]:
    """The feedback row of ``later`` re-asking the call ``trace_id`` of ``service``."""
    return {
        "trace_id": trace_id,
        "feedback_id": f"reask:{later.trace_id}",
        "time": later.time,
        "service": service or later.service,
        "kind": "reask",
        "value": -1.0,
        "label": "negative",
        "comment": "",
        "source": "implicit",
        "attributes": json.dumps({"rag.feedback.reask.trace_id": later.trace_id}),
    }
