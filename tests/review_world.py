"""A review app world for the security tests: a chDB store holding one trace judged by the local
judge whose query, chunk, answer, claims and service are hostile HTML, and an eval set whose
cases carry the same text and ids a URL path cannot hold as they are (``/``, ``..``, ``?``)."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

from ragpulse.collector.eval.files import write_jsonl
from ragpulse.collector.review.app import ReviewSettings, build_app
from ragpulse.collector.review.store import ReviewStore
from ragpulse.collector.storage.clickhouse import Storage
from starlette.testclient import TestClient

__all__ = [
    "BASE",
    "HOSTILE_CASE_ID",
    "ODD_IDS",
    "SAME_ORIGIN",
    "TRACE_ID",
    "World",
    "hostile",
    "judge_hostile_trace",
    "plain_case",
]

BASE = "http://127.0.0.1:8470"
SAME_ORIGIN = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}
TRACE_ID = "ab" * 16


def hostile(field: str) -> str:
    """Text that runs script wherever a page puts it unescaped, in an element or an attribute."""
    return f'<script>alert("{field}")</script><img src=x onerror="alert(\'{field}\')">\'"&'


def _record() -> dict[str, Any]:
    return {
        "trace_id": TRACE_ID,
        "query": "How long do refunds take? " + hostile("query"),
        "answer": f"Refunds are issued within 14 days {hostile('claim')}. " + hostile("answer"),
        "chunks": [
            {
                "id": "C1" + hostile("chunk-id"),
                "content": "Refunds are issued within 14 days of the return. " + hostile("chunk"),
                "score": 0.9,
                "metadata": {"status": hostile("status"), "authoritative": True},
            }
        ],
    }


def judge_hostile_trace() -> dict[str, Any]:
    """The local judge's output for the hostile trace; its claims carry the hostile text."""
    from ragpulse.collector.judge import get_judge

    out = get_judge("local").judge(_record())
    assert any("claim" in c["text"] and "<script>" in c["text"] for c in out["claims"]), out["claims"]
    return out


def plain_case(cid: str, **extra: Any) -> dict[str, Any]:
    return {"id": cid, "query": f"question {cid}", "gold_claims": ["a claim"], "split": "dev",
            "review": {"status": "proposed", "reviewer": None, "reviewed_at": None}, **extra}  # fmt: skip


HOSTILE_CASE_ID = 'team/refunds <b>"x"</b>&\'1'
ODD_IDS = ("..", ".", "a?b#c", "%2e%2e", "x/../y", "日本 語/", "/lead")


class World:
    """A chDB store with the judged hostile trace, an eval set, and the app over both."""

    def __init__(self, base: Path, judged: dict[str, Any]) -> None:
        from ragpulse.collector.judge.service.worker import judgment_rows

        self.storage = Storage(f"chdb://{base / 'db'}")
        self.storage.apply_schema()
        rec, now = _record(), time.time_ns()
        row = {
            "trace_id": TRACE_ID, "time": dt.datetime.fromtimestamp(now / 1e9, dt.timezone.utc),
            "service": hostile("service"), "query": rec["query"], "answer": rec["answer"],
            "chunk_ids": [c["id"] for c in rec["chunks"]], "chunk_contents": [c["content"] for c in rec["chunks"]],
            "chunk_scores": [c["score"] for c in rec["chunks"]],
            "chunk_metadata": [json.dumps(c["metadata"]) for c in rec["chunks"]],
        }  # fmt: skip
        self.storage.insert_rows("rag_traces", list(row), [row])
        message = {
            "trace_id": TRACE_ID,
            "service": hostile("service"),
            "time_unix_nano": now,
            "span_count": 3,
        }
        jrow, claims = judgment_rows(message, judged, judged["judge_id"], 1.0, now // 10**6)
        self.storage.insert_claims(claims)
        self.storage.insert_judgments([jrow])
        self.judge_id = str(judged["judge_id"])
        self.claims = [c["text"] for c in judged["claims"]]
        self.evalset = base / "evalset.jsonl"
        prov = {"service": hostile("service"), "trace_ids": [TRACE_ID], "judge_id": self.judge_id,
                "answer": rec["answer"], "chunks": rec["chunks"], "reasons": [hostile("reason")], "occurrences": 1}  # fmt: skip
        cases = [plain_case(HOSTILE_CASE_ID, provenance=prov, query=rec["query"])]
        write_jsonl(self.evalset, cases + [plain_case(cid) for cid in ODD_IDS])
        self.queries: list[str] = []
        real_query = self.storage.query

        def spy(sql: str, parameters: dict[str, Any] | None = None) -> Any:
            self.queries.append(sql)
            return real_query(sql, parameters)

        self.storage.query = spy  # type: ignore[method-assign]

    def client(self, evalset: Path | None = None, **settings: Any) -> TestClient:
        s = ReviewSettings(
            evalset or self.evalset, settings.pop("reviewer", "ann"), self.judge_id, 0.5, **settings
        )
        app = build_app(ReviewStore(self.storage), s)
        return TestClient(app, base_url=BASE, raise_server_exceptions=False, follow_redirects=False)

    def reviews(self) -> int:
        """Rows in ``rag_reviews``: every label anyone saved."""
        return int(self.storage.query("SELECT count() FROM {db}.rag_reviews")[0][0])

    def serve_args(self) -> tuple[str, ...]:
        """``ragpulse review`` arguments over this world's store and eval set. Closes the store
        here first (an embedded database has one owner at a time); :meth:`reopen` takes it back."""
        self.storage.close()
        db = str(self.evalset.parent / "db")
        return ("--db", db, "--evalset", str(self.evalset), "--judge", self.judge_id, "--threshold", "0.5")

    def reopen(self) -> None:
        """Open the store again after a server over it stopped."""
        self.storage = Storage(f"chdb://{self.evalset.parent / 'db'}")
