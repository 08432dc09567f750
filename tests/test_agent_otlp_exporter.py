"""``exporter="otlp"``: the OTel SDK's OTLP/HTTP exporter, set up from ``RAGPULSE_OTLP_*`` variables,
sending to a real ``ragpulse collect --no-kafka`` (issue 43).

One export batch becomes as many requests as keep each under ``max_record_bytes`` (by an
estimate that must never undercount the encoded size); headers reach the receiver (its bearer
token refuses a wrong one, and those spans are counted as failed exports, never raised); the
issue's conversational case is stored with both chunks and its citations resolved.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import configure, flush, retrieval, shutdown, stats, tool, trace_rag
from ragpulse.agent.config import settings_from_env
from ragpulse.agent.otlp_http import estimated_size, request_overhead, traces_url

from tests.chdb_rows import stored_rows
from tests.services import collect_no_kafka, free_port
from tests.test_agent_answer_sources import ANSWER, FOLLOW_UP, HISTORY, chat


def test_settings_from_the_environment_and_their_validation() -> None:
    s = settings_from_env(
        {
            "RAGPULSE_EXPORTER": "OTLP",
            "RAGPULSE_OTLP_ENDPOINT": " https://collector.internal:4320 ",
            "RAGPULSE_OTLP_HEADERS": "authorization=Bearer%20t0k,x-tenant=a",
            "RAGPULSE_OTLP_TIMEOUT_S": "2.5",
            "RAGPULSE_OTLP_COMPRESSION": "none",
        }
    ).validated()
    assert s.exporter == "otlp" and s.otlp_endpoint == "https://collector.internal:4320"
    assert dict(s.otlp_headers) == {"authorization": "Bearer t0k", "x-tenant": "a"}
    assert s.otlp_timeout_s == 2.5 and s.otlp_compression is None
    defaults = settings_from_env({"RAGPULSE_EXPORTER": "otlp"}).validated()
    assert defaults.otlp_endpoint == "http://localhost:4320" and defaults.otlp_compression == "gzip"
    for bad in ({"otlp_endpoint": "localhost:4320"}, {"otlp_compression": "brotli"}, {"otlp_timeout_s": 0}):
        with pytest.raises(ValueError):
            configure(exporter="otlp", **bad)
    assert traces_url("http://h:4320") == traces_url("http://h:4320/") == "http://h:4320/v1/traces"
    assert traces_url("http://h:4318/v1/traces") == "http://h:4318/v1/traces"


def test_the_size_estimate_never_undercounts_the_encoding() -> None:
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, redact=False)
    try:

        @retrieval
        def search(query: str) -> list[dict]:
            return [
                {"id": f"C{i}", "content": ("é✓ " * i) + "x" * 300, "score": i / 10, "metadata": {"n": i}}
                for i in range(12)
            ]

        @tool
        def lookup(key: str) -> dict:
            return {"key": key, "values": list(range(50))}

        @trace_rag
        def answer(question: str, history: list) -> str:
            search(question)
            lookup("k")
            return "Answer [1][2]."

        for i in range(5):
            answer(f"question {i} ✓", HISTORY)
        flush()
        spans = exporter.get_finished_spans()
        assert len(spans) == 15
        overhead = request_overhead(spans[0])
        for span in spans:
            assert estimated_size(span) + overhead >= encode_spans([span]).ByteSize(), span.name
        assert sum(map(estimated_size, spans)) + overhead >= encode_spans(spans).ByteSize()
    finally:
        shutdown()


@retrieval
def big_search(query: str) -> list[dict]:
    return [{"id": f"{query}-{i}", "content": f"{query} chunk {i} " + "z" * 3000} for i in range(10)]


@trace_rag
def big_call(query: str) -> str:
    big_search(query)
    return "Big answer [1]."


def _delta(before: dict, key: str) -> int:
    now = stats()
    if key.startswith("dropped."):
        name = key.split(".", 1)[1]
        return now["dropped"][name] - before["dropped"][name]
    return now[key] - before[key]


def test_the_otlp_exporter_sends_to_ragpulse_collect_no_kafka(tmp_path: Path, monkeypatch) -> None:
    port = free_port()
    db = tmp_path / "db"
    cfg = {
        "storage": {"dsn": f"chdb://{db}"}, "metrics": {"port": 0}, "judge": {"enabled": False},
        "receiver": {"port": port, "auth_token": "s3cret"}, "sampling": {"rate": 1.0},
        "limits": {"max_record_bytes": 400_000},
    }  # fmt: skip
    monkeypatch.setenv("RAGPULSE_EXPORTER", "otlp")
    monkeypatch.setenv("RAGPULSE_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("RAGPULSE_LIMIT_MAX_RECORD_BYTES", "150000")
    with collect_no_kafka(cfg, tmp_path / "c.yaml", stop_s=60):
        monkeypatch.setenv("RAGPULSE_OTLP_HEADERS", "authorization=Bearer%20wrong")
        configure(service_name="otlp-app", schedule_delay_ms=50, otlp_timeout_s=5)
        before = stats()
        try:
            assert big_call("refused") == "Big answer [1]."  # a refused export never reaches the caller
            flush()
            assert _delta(before, "dropped.export_failed") == 2 and _delta(before, "spans_exported") == 0
        finally:
            shutdown()
        monkeypatch.setenv("RAGPULSE_OTLP_HEADERS", "authorization=Bearer%20s3cret")
        # one batch at flush(): 65 spans, about 0.93 MB, past the receiver's 400 kB as one request
        configure(service_name="otlp-app", schedule_delay_ms=600_000, export_batch_spans=512)
        before = stats()
        try:
            assert chat(FOLLOW_UP, HISTORY, session_id="s-43") == ANSWER
            for i in range(30):  # a retrieval of 10 chunks of 3 kB each and its root
                big_call(f"q{i}")
            flush()
            assert _delta(before, "spans_exported") == 5 + 60 and _delta(before, "dropped.export_failed") == 0
            assert _delta(before, "records_sent") >= 7  # requests of at most 150 kB
        finally:
            shutdown()
    rows = stored_rows(
        db, "SELECT query, chunk_ids, citation_doc_ids, session_id, service FROM ragpulse.rag_traces FINAL"
    )
    assert len(rows) == 31 and {r[4] for r in rows} == {"otlp-app"}
    (issue,) = [r for r in rows if r[0] == FOLLOW_UP]
    assert issue[1] == ["RET-5Y", "HOLD-1"] and issue[2] == ["RET-5Y", "HOLD-1"] and issue[3] == "s-43"
    big = {r[0]: r for r in rows if r[0] != FOLLOW_UP}
    assert set(big) == {f"q{i}" for i in range(30)} and all(len(r[1]) == 10 for r in big.values())
    assert "refused" not in big
