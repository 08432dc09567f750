"""Implicit feedback: a user asking the same question again soon after is unhappy with the answer.

A re-ask is a trace whose ``session.id`` matches an earlier trace's, within
``window_s`` of it, with a near-duplicate query (character-shingle Jaccard
similarity at least ``threshold`` (0.7) after normalisation, collector/export/text.py).
It becomes one implicit negative feedback row on the *earlier* trace
(kind ``reask``, source ``implicit``), keyed by the later trace's id so a
replay writes the same row again. Configured by the ``feedback.reask``
section; ``enabled: false`` turns it off.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..export.text import jaccard, normalize_query, shingles
from ..storage.clickhouse import Storage

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


class ReaskDetector:
    """Finds re-asks among newly assembled traces, against stored and in-batch earlier traces."""

    def __init__(self, storage: Storage, section: Mapping[str, Any] | None = None) -> None:
        section = dict(section or {})
        self.storage = storage
        self.enabled = bool(section.get("enabled", True))
        self.window_ns = int(float(section.get("window_s", 300)) * _NS)
        self.threshold = float(section.get("threshold", 0.7))
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError("feedback.reask.threshold must be within (0, 1]")

    def _earlier(self, traces: Sequence[Call]) -> list[tuple[str, str, int, str, str]]:
        """The latest stored traces of these sessions in the window, at most ``_LOOKBACK`` each
        (bounded work per batch however busy a session is); no FINAL, cheaper on the ingest
        path: a replayed row repeats a trace id, which :meth:`detect` keeps once."""
        sessions = sorted({t.session_id for t in traces})
        low = min(t.time for t in traces) - self.window_ns
        high = max(t.time for t in traces)
        return [
            (str(tid), str(sid), int(ns), str(q), str(svc))
            for tid, sid, ns, q, svc in self.storage.query(
                "SELECT trace_id, session_id, toUnixTimestamp64Nano(time), query, service "
                "FROM {db}.rag_traces WHERE session_id IN %(s)s "
                "AND time >= fromUnixTimestamp64Nano(%(lo)s) AND time <= fromUnixTimestamp64Nano(%(hi)s) "
                "ORDER BY time DESC, trace_id DESC LIMIT %(k)s BY session_id",
                {"s": sessions, "lo": low, "hi": high, "k": _LOOKBACK},
            )
        ]

    def detect(self, traces: Sequence[Call]) -> list[dict[str, Any]]:
        """Feedback rows (``rag_feedback`` columns) for the re-asks among ``traces``."""
        with_session = [t for t in traces if t.session_id and t.query]
        if not self.enabled or not with_session:
            return []
        calls: dict[str, tuple[int, str, str]] = {}  # trace id -> (time, session, service)
        queries: dict[str, str] = {}
        for tid, sid, ns, query, service in self._earlier(with_session):
            calls[tid], queries[tid] = (ns, sid, service), query
        for t in with_session:
            calls[t.trace_id], queries[t.trace_id] = (t.time, t.session_id, t.service), t.query
        by_session: dict[str, list[tuple[int, str]]] = {}
        for tid, (ns, sid, _) in calls.items():
            by_session.setdefault(sid, []).append((ns, tid))
        for entries in by_session.values():
            entries.sort()
        grams: dict[str, set[str]] = {}

        def grams_of(tid: str) -> set[str]:
            g = grams.get(tid)
            if g is None:
                g = grams[tid] = shingles(normalize_query(queries[tid]))
            return g

        rows = []
        for t in sorted(with_session, key=lambda x: (x.time, x.trace_id)):
            earlier = self._match(t, by_session[t.session_id], grams_of)
            if earlier is not None:
                rows.append(_row(earlier, calls[earlier][2], t))
        return rows

    def _match(self, t: Call, entries: list[tuple[int, str]], grams_of: Any) -> str | None:
        """The latest of the session's ``_LOOKBACK`` calls before ``t`` (in the window) that ``t``
        re-asks, or None. Bounded so a session with thousands of calls stays cheap."""
        mine = grams_of(t.trace_id)
        end = bisect.bisect_left(entries, (t.time, ""))
        low = t.time - self.window_ns
        for ns, tid in reversed(entries[max(0, end - _LOOKBACK) : end]):
            if ns < low:
                break
            if tid != t.trace_id and jaccard(mine, grams_of(tid)) >= self.threshold:
                return tid
        return None


def _row(tid: str, service: str, later: Call) -> dict[str, Any]:
    return {
        "trace_id": tid,
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
