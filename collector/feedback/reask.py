"""Implicit feedback: a user asking the same question again soon after is unhappy with the answer.

A re-ask is a trace whose ``session.id`` matches an earlier trace's, within
``window_s`` of it, with a near-duplicate query (character-shingle Jaccard
similarity at least ``threshold`` after normalisation, collector/export/text.py).
It becomes one implicit negative feedback row on the *earlier* trace
(kind ``reask``, source ``implicit``), keyed by the later trace's id so a
replay writes the same row again. Configured by the ``feedback.reask``
section; ``enabled: false`` turns it off.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..export.text import jaccard, normalize_query, shingles
from ..ingest.model import RagTrace
from ..storage.clickhouse import Storage

__all__ = ["ReaskDetector"]

_NS = 1_000_000_000


class ReaskDetector:
    """Finds re-asks among newly assembled traces, against stored and in-batch earlier traces."""

    def __init__(self, storage: Storage, section: Mapping[str, Any] | None = None) -> None:
        section = dict(section or {})
        self.storage = storage
        self.enabled = bool(section.get("enabled", True))
        self.window_ns = int(float(section.get("window_s", 300)) * _NS)
        self.threshold = float(section.get("threshold", 0.6))
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError("feedback.reask.threshold must be within (0, 1]")

    def _earlier(self, traces: Sequence[RagTrace]) -> list[tuple[str, str, int, str, str]]:
        """Stored traces of these sessions in the window; no FINAL (cheaper on the ingest path):
        a replayed row repeats a trace id, which :meth:`detect` keeps once."""
        sessions = sorted({t.session_id for t in traces})
        low = min(t.time for t in traces) - self.window_ns
        high = max(t.time for t in traces)
        return [
            (str(tid), str(sid), int(ns), str(q), str(svc))
            for tid, sid, ns, q, svc in self.storage.query(
                "SELECT trace_id, session_id, toUnixTimestamp64Nano(time), query, service "
                "FROM {db}.rag_traces WHERE session_id IN %(s)s "
                "AND time >= fromUnixTimestamp64Nano(%(lo)s) AND time <= fromUnixTimestamp64Nano(%(hi)s)",
                {"s": sessions, "lo": low, "hi": high},
            )
        ]

    def detect(self, traces: Sequence[RagTrace]) -> list[dict[str, Any]]:
        """Feedback rows (``rag_feedback`` columns) for the re-asks among ``traces``."""
        with_session = [t for t in traces if t.session_id and t.query]
        if not self.enabled or not with_session:
            return []
        by_session: dict[str, dict[str, tuple[int, str, str]]] = {}
        for tid, sid, ns, query, service in self._earlier(with_session):
            by_session.setdefault(sid, {})[tid] = (ns, query, service)
        for t in with_session:
            by_session.setdefault(t.session_id, {})[t.trace_id] = (t.time, t.query, t.service)
        rows: list[dict[str, Any]] = []
        for t in sorted(with_session, key=lambda x: (x.time, x.trace_id)):
            earlier = self._match(t, by_session[t.session_id])
            if earlier is not None:
                rows.append(_row(earlier, t))
        return rows

    def _match(self, t: RagTrace, session: dict[str, tuple[int, str, str]]) -> tuple[str, int, str] | None:
        """The latest earlier trace of the session that ``t`` re-asks, or None."""
        mine = shingles(normalize_query(t.query))
        best: tuple[int, str, str] | None = None
        for tid, (ns, query, service) in session.items():
            if tid == t.trace_id or not t.time - self.window_ns <= ns < t.time:
                continue
            if jaccard(mine, shingles(normalize_query(query))) >= self.threshold:
                if best is None or (ns, tid) > (best[0], best[1]):
                    best = (ns, tid, service)
        return None if best is None else (best[1], best[0], best[2])


def _row(earlier: tuple[str, int, str], later: RagTrace) -> dict[str, Any]:
    tid, _, service = earlier
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
