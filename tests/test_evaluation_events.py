"""Judgments back out as OTel events, end to end: the judge workers (embedded loop and the Kafka
judge role) emit one ``gen_ai.evaluation.result`` log record per score through the OTel SDK's
OTLP/HTTP log exporter into a real receiver process (tests/otlp_sink.py decodes what arrived
with opentelemetry-proto). The records carry the judged trace's id and its RAG root span's id,
as the application saw them, and one record per score."""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ragpulse.collector.contract import SCORE_NAMES
from ragpulse.collector.core.metrics import Metrics
from ragpulse.collector.judge.service.evaluation_events import (
    EVENT_NAME,
    EvaluationEvents,
    evaluation_records,
    score_thresholds,
)

from tests.otlp_sink import OtlpSink

CHUNKS = [
    {"id": "C1", "content": "Covered institutions retain transaction logs for five years.", "score": 0.9},
    {"id": "C2", "content": "Customer contact records must be corrected upon a verified request.", "score": 0.4},
]  # fmt: skip
RIGHT = "Transaction logs are retained for five years [1]."
WRONG_CITATION = "Transaction logs are retained for five years [2]."


@pytest.fixture
def sink(tmp_path: Path) -> Iterator[OtlpSink]:
    s = OtlpSink(tmp_path / "sink").start()
    yield s
    s.stop()


def _by_trace(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        out[r["trace_id"]].append(r)
    return out


def _scores(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    names = [r["attributes"]["gen_ai.evaluation.name"] for r in records]
    assert sorted(names) == sorted(SCORE_NAMES), names  # one record per score
    return {r["attributes"]["gen_ai.evaluation.name"]: r["attributes"] for r in records}


def test_embedded_judgments_arrive_as_one_event_per_score_on_the_root_span(
    tmp_path: Path, sink: OtlpSink
) -> None:
    from opentelemetry import trace
    from ragpulse import agent
    from ragpulse.collector.embedded.collector import EmbeddedCollector

    config = {"sampling": {"rate": 1.0}, "evaluations": {"otlp_endpoint": sink.url, "schedule_delay_s": 0.2}}
    collector = EmbeddedCollector(tmp_path / "db", config=config, metrics_port=None)
    collector.start()
    roots: dict[str, tuple[str, str]] = {}  # answer -> (trace id, root span id) as the app saw them
    try:
        agent.configure(service_name="policy-bot", exporter="embedded")

        @agent.retrieval
        def search(query: str) -> list[dict]:
            return CHUNKS

        @agent.trace_rag
        def answer(query: str, text: str) -> str:
            search(query)
            ctx = trace.get_current_span().get_span_context()
            roots[text] = (format(ctx.trace_id, "032x"), format(ctx.span_id, "016x"))
            return text

        answer("How long are transaction logs kept?", RIGHT)
        answer("How long are transaction logs kept?", WRONG_CITATION)
        agent.flush()
        assert collector.flush(60)
        assert collector.evaluation_events is not None and collector.evaluation_events.flush(30)
        records = sink.wait_logs(2 * len(SCORE_NAMES))
        stored = dict(collector.storage.query("SELECT trace_id, root_span_id FROM {db}.rag_traces FINAL"))
    finally:
        agent.shutdown()
        collector.stop()
    assert len(records) == 2 * len(SCORE_NAMES)
    by_trace = _by_trace(records)
    assert set(by_trace) == {tid for tid, _ in roots.values()}
    for tid, sid in roots.values():
        assert stored[tid] == sid
        assert {(r["trace_id"], r["span_id"]) for r in by_trace[tid]} == {(tid, sid)}
        assert {r["event_name"] for r in by_trace[tid]} == {EVENT_NAME}
        assert {r["resource"]["service.name"] for r in by_trace[tid]} == {"ragpulse"}
    right = _scores(by_trace[roots[RIGHT][0]])
    wrong = _scores(by_trace[roots[WRONG_CITATION][0]])
    assert right["faithfulness"]["gen_ai.evaluation.score.value"] == 1.0
    assert right["faithfulness"]["gen_ai.evaluation.score.label"] == "pass"
    assert right["citation_correctness"]["gen_ai.evaluation.score.label"] == "pass"
    assert wrong["citation_correctness"]["gen_ai.evaluation.score.value"] == 0.0
    assert wrong["citation_correctness"]["gen_ai.evaluation.score.label"] == "fail"
    explanation = wrong["citation_correctness"]["gen_ai.evaluation.explanation"]
    assert "[C2]" in explanation and "five years" in explanation
    assert wrong["faithfulness"]["ragpulse.failure_mode"] == "generation"
    # scores without an objective carry no label
    assert "gen_ai.evaluation.score.label" not in right["answer_relevance"]


def test_kafka_judge_role_emits_the_events_of_what_it_stores(
    kafka_broker: Any, tmp_path: Path, sink: OtlpSink
) -> None:
    from kafka import KafkaProducer
    from ragpulse.collector.demo.synthetic import make_trace, traces_data

    from tests.test_collector_kafka import CollectorProcess

    suffix = uuid.uuid4().hex[:8]
    config = {
        "kafka": {"bootstrap_servers": kafka_broker.bootstrap, "spans_topic": f"ev-spans-{suffix}",
                  "judge_topic": f"ev-judge-{suffix}", "deadletter_topic": f"ev-dead-{suffix}",
                  "group_id": f"c-{suffix}", "judge_group_id": f"j-{suffix}"},
        "storage": {"dsn": f"chdb://{tmp_path / 'chdb'}", "batch_max_seconds": 0.5},
        "assembly": {"timeout_s": 1.0}, "metrics": {"port": 0}, "sampling": {"rate": 1.0},
        "judge": {"enabled": True, "judge": "local"},
        "evaluations": {"otlp_endpoint": sink.url + "/v1/logs", "schedule_delay_s": 0.2},
    }  # fmt: skip
    path = tmp_path / "collector.yaml"
    path.write_text(yaml.safe_dump(config))
    traces = [make_trace(i, seed=f"ev-{suffix}") for i in range(4)]
    # the app's side: each trace's root span (the one without a parent)
    expected = {
        t.trace_id.hex(): next(s.span_id.hex() for s in t.spans if not s.parent_span_id) for t in traces
    }
    proc = CollectorProcess(path, tmp_path / "collector.log", role="all")
    proc.start()
    try:
        url = proc.wait_ready(90)
        producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all")
        for t in traces:
            producer.send(
                config["kafka"]["spans_topic"],
                key=t.trace_id.hex().encode(),
                value=traces_data([(t.service, t.spans)]),
            )
        producer.flush(30)
        producer.close()
        records = sink.wait_logs(len(traces) * len(SCORE_NAMES), timeout=90)
        time.sleep(0.5)  # anything beyond one record per score would arrive meanwhile
        records = sink.logs()
        import urllib.request

        with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
        rc, _ = proc.terminate()
    finally:
        proc.cleanup()
    assert rc == 0, proc.log_tail()
    by_trace = _by_trace(records)
    assert set(by_trace) == set(expected), proc.log_tail()
    for tid, sid in expected.items():
        _scores(by_trace[tid])
        assert {r["span_id"] for r in by_trace[tid]} == {sid}
    assert f'ragpulse_evaluation_events_total{{result="exported"}} {float(len(records))}' in metrics


def test_records_label_against_the_objectives_and_explain_errors_and_abstentions() -> None:
    thresholds = score_thresholds({"thresholds": {"answer_relevance": 0.5}})
    assert thresholds["faithfulness"] == 0.97 and thresholds["answer_relevance"] == 0.5
    claims = [
        {"text": "Logs are kept five years.", "verdict": "supported", "cited_chunk_ids": ["C1"], "citation_valid": 1},
        {"text": "Logs are kept forever.", "verdict": "unsupported", "cited_chunk_ids": ["C2"], "citation_valid": 0},
    ]  # fmt: skip
    row: dict[str, Any] = {n: None for n in SCORE_NAMES} | {
        "faithfulness": 0.5, "citation_correctness": 0.5, "answer_relevance": 1.0, "failure_mode": "generation"
    }  # fmt: skip
    recs = {r.name: r for r in evaluation_records(row, claims, thresholds)}
    assert [r.name for r in evaluation_records(row, claims, thresholds)] == list(SCORE_NAMES)
    assert (recs["faithfulness"].label, recs["faithfulness"].explanation) == (
        "fail",
        "unsupported: Logs are kept forever.",
    )
    assert (
        recs["citation_correctness"].explanation == "citation [C2] does not support: Logs are kept forever."
    )
    assert recs["answer_relevance"].label == "pass"
    assert recs["context_precision"].value is None and recs["context_precision"].label is None
    abstained = {n: None for n in SCORE_NAMES} | {"abstained": 1, "abstention_kind": "appropriate"}
    assert {r.explanation for r in evaluation_records(abstained, [], thresholds)} == {
        "not applicable: the answer abstained (appropriate)"
    }
    failed = evaluation_records({"error": "TimeoutError: judge took too long"}, [], thresholds)
    assert len(failed) == len(SCORE_NAMES)
    assert {(r.error_type, r.value) for r in failed} == {("TimeoutError", None)}


def test_records_that_cannot_be_exported_are_counted_not_waited_for(tmp_path: Path) -> None:
    from tests.services import free_port

    metrics = Metrics()
    section = {"otlp_endpoint": f"http://127.0.0.1:{free_port()}", "timeout_s": 1.0, "schedule_delay_s": 0.1,
               "max_queue_size": 4, "max_export_batch_size": 4}  # fmt: skip
    events = EvaluationEvents(section, metrics)
    row = {n: 1.0 for n in SCORE_NAMES} | {"trace_id": "ab" * 16, "judge_id": "j", "failure_mode": "healthy"}
    try:
        for _ in range(3):  # 18 records into a queue of 4: emit returns at once, the rest are dropped
            events.emit(row, [], {"root_span_id": "cd" * 8})
        events.flush(10)
    finally:
        events.shutdown()
    counts = {s.labels["result"]: s.value for m in metrics.registry.collect() if m.name == "ragpulse_evaluation_events"
              for s in m.samples if s.name.endswith("_total")}  # fmt: skip
    assert counts.get("exported", 0) == 0
    assert counts["failed"] >= 4 and counts["dropped"] >= 1
    assert counts["failed"] + counts["dropped"] == 18
