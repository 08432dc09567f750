"""A judge wrapper that remembers judgments on disk by content hash.

An eval asks the judge many small questions (does this chunk entail that gold
claim?), and re-running an eval after changing the app changes only some of
them. The key is the judge library's :func:`content_key` (judge id, query,
chunks, answer, citations; not the trace id), so a judgment is reused exactly
when the same judge would see the same content. Failed judgments are never
stored: they are retried on the next run.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ..judge.cache import content_key

__all__ = ["CachedJudge", "JudgmentStore"]


class JudgmentStore:
    """SQLite map from content key to judge output record (one file, safe to share between runs)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS judgments (key TEXT PRIMARY KEY, record TEXT NOT NULL)")
        self._db.commit()

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(f"SELECT key, record FROM judgments WHERE key IN ({marks})", part)
                found.update((k, json.loads(r)) for k, r in rows)
        return found

    def put_many(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO judgments (key, record) VALUES (?, ?)",
                [(k, json.dumps(r, ensure_ascii=False)) for k, r in items],
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedJudge:
    """Any ragpulse judge plus an optional :class:`JudgmentStore`; counts hits and misses."""

    def __init__(self, judge: Any, store: JudgmentStore | None = None) -> None:
        self.inner = judge
        self.judge_id: str = judge.judge_id
        self.store = store
        self.hits = 0
        self.misses = 0
        self.cost_usd = 0.0

    def judge_many(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Judge records in order: stored judgments first, the rest through the judge (batched when
        it has ``judge_many``, e.g. the LLM judge's concurrent requests)."""
        keys = [content_key(self.judge_id, r) for r in records]
        stored = self.store.get_many(list(dict.fromkeys(keys))) if self.store else {}
        todo = [i for i, k in enumerate(keys) if k not in stored]
        self.hits += len(records) - len(todo)
        self.misses += len(todo)
        fresh: list[dict[str, Any]] = []
        if todo:
            batch = [records[i] for i in todo]
            many = getattr(self.inner, "judge_many", None)
            fresh = many(batch) if many is not None else [self.inner.judge(r) for r in batch]
        out: list[dict[str, Any] | None] = [None] * len(records)
        keep: list[tuple[str, dict[str, Any]]] = []
        for i, rec in zip(todo, fresh, strict=True):
            out[i] = rec
            self.cost_usd += float(rec.get("judge_cost_usd") or 0.0)
            if not rec.get("error"):
                keep.append((keys[i], rec))
        for i, k in enumerate(keys):
            if out[i] is None:
                out[i] = dict(stored[k], trace_id=records[i].get("trace_id", ""))
        if self.store and keep:
            self.store.put_many(keep)
        return [r for r in out if r is not None]

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
        if self.store is not None:
            self.store.close()
