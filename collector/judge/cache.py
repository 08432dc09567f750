"""Content-hash cache for judgments: the same query, chunks (with where they came from),
answer, citations and conversation under the same judge id make no new LLM request."""

from __future__ import annotations

import copy
import hashlib
import json
from collections import OrderedDict
from typing import Any

__all__ = ["JudgmentCache", "content_key"]


def content_key(judge_id: str, record: dict[str, Any]) -> str:
    """SHA-256 over the judge id and the judged content (not the trace id)."""
    payload = {
        "judge": judge_id,
        "query": record.get("query", ""),
        "answer": record.get("answer", ""),
        "chunks": [
            [c.get("id"), c.get("content"), c.get("metadata") or {}, *_provenance(c)]
            for c in record.get("chunks", [])
        ],
        "citations": record.get("citations") or [],
    }
    if record.get("conversation"):  # absent from the payload when empty: older keys stay as they were
        payload["conversation"] = record["conversation"]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _provenance(chunk: dict[str, Any]) -> list[str]:
    """Where a chunk came from, when it is not a retrieval without a known query ([] then)."""
    if (chunk.get("source_type") or "retrieval") == "retrieval" and not chunk.get("query"):
        return []
    return [chunk.get("source_type") or "retrieval", chunk.get("tool") or "", chunk.get("query") or ""]


class JudgmentCache:
    """A bounded LRU map from content key to output record."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> dict[str, Any] | None:
        rec = self._data.get(key)
        if rec is None:
            self.misses += 1
            return None
        self._data.move_to_end(key)
        self.hits += 1
        return copy.deepcopy(rec)

    def put(self, key: str, record: dict[str, Any]) -> None:
        if self.max_entries <= 0:
            return
        self._data[key] = copy.deepcopy(record)
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)
