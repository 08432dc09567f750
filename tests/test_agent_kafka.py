"""The Kafka exporter against a real broker: record format, keys, partitions, no loss, outages, fork.

Uses the session's real Kafka 4 broker (fixture ``kafka_broker``). Each test
writes to its own fresh topic with two partitions.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections import defaultdict

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from ragpulse.agent import configure, flush, generation, retrieval, shutdown, stats, trace_rag

from tests.services import ROOT

pytestmark = pytest.mark.services

CHUNKS = [
    {"id": f"C{i}", "content": f"chunk {i} " + "policy text " * 15, "score": 1 - i / 10} for i in range(1, 6)
]


@retrieval(name="search")
def search(query: str) -> list[dict]:
    return CHUNKS


@generation(name="complete", model="gpt-test")
def complete(prompt: str) -> str:
    return "Logs are kept five years [1]. Holds must be released [2]."


@trace_rag(name="answer")
def rag_call(query: str) -> str:
    search(query)
    return complete(query)


def consume(bootstrap: str, topic: str, want_spans: int, timeout: float = 90.0):
    """All records of ``topic`` as (partition, key, TracesData, raw value) until ``want_spans`` spans are seen."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
        consumer_timeout_ms=3000,
    )
    out = []
    spans = 0
    deadline = time.monotonic() + timeout
    try:
        while spans < want_spans and time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=1000, max_records=5000)
            for records in batch.values():
                for rec in records:
                    data = TracesData()
                    data.ParseFromString(rec.value)
                    out.append((rec.partition, rec.key.decode(), data, rec.value))
                    spans += sum(len(ss.spans) for rs in data.resource_spans for ss in rs.scope_spans)
        # Anything beyond what we waited for would be a duplicate or a stray: read a little more.
        extra = consumer.poll(timeout_ms=500)
        for records in extra.values():
            for rec in records:
                data = TracesData()
                data.ParseFromString(rec.value)
                out.append((rec.partition, rec.key.decode(), data, rec.value))
    finally:
        consumer.close()
    return out


def spans_of(data: TracesData):
    for rs in data.resource_spans:
        for ss in rs.scope_spans:
            yield from ss.spans


def attrs_of(span) -> dict:
    out = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value")) if v.WhichOneof("value") else None
    return out


@pytest.fixture()
def topic(kafka_broker):
    name = f"agent-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name, partitions=2)
    return name


def test_10k_calls_decode_as_traces_data_keyed_by_trace_one_partition_none_lost(kafka_broker, topic):
    configure(
        exporter="kafka",
        kafka_bootstrap_servers=kafka_broker.bootstrap,
        kafka_topic=topic,
        service_name="kafka-10k",
        max_queue_spans=40_000,
    )
    before = stats()
    try:
        n = 10_000
        for i in range(n):
            assert rag_call(f"question {i}").endswith("[2].")
        assert flush(timeout_s=120)
        after = stats()
    finally:
        shutdown()
    assert after["spans_dropped"] == before["spans_dropped"], after["dropped"]
    assert after["spans_exported"] - before["spans_exported"] == 3 * n

    records = consume(kafka_broker.bootstrap, topic, 3 * n)
    partitions_of_trace: dict[str, set[int]] = defaultdict(set)
    names_of_trace: dict[str, list[str]] = defaultdict(list)
    span_ids = set()
    queries = set()
    for partition, key, data, _raw in records:
        assert len(key) == 32 and int(key, 16)
        for rs in data.resource_spans:
            resource = {kv.key: kv.value.string_value for kv in rs.resource.attributes}
            assert resource["service.name"] == "kafka-10k"
        for span in spans_of(data):
            assert span.trace_id.hex() == key  # every span of a record belongs to the key's trace
            partitions_of_trace[key].add(partition)
            names_of_trace[key].append(span.name)
            span_ids.add(span.span_id)
            if span.name == "answer":
                a = attrs_of(span)
                assert a["rag.root"] is True
                assert a["rag.citation.count"] == 2
                queries.add(a["input.value"])
                assert [e.name for e in span.events] == ["rag.citation", "rag.citation"]
            if span.name == "search":
                a = attrs_of(span)
                assert a["retrieval.documents.4.document.id"] == "C5"
    assert len(span_ids) == 3 * n  # none lost, none duplicated
    assert len(partitions_of_trace) == n
    assert all(len(p) == 1 for p in partitions_of_trace.values())
    assert {p for ps in partitions_of_trace.values() for p in ps} == {0, 1}
    assert all(sorted(v) == ["answer", "complete", "search"] for v in names_of_trace.values())
    assert queries == {f"question {i}" for i in range(n)}


def test_broker_down_app_keeps_serving_drops_counted_overhead_bounded(kafka_broker, topic):
    configure(
        exporter="kafka",
        kafka_bootstrap_servers=kafka_broker.bootstrap,
        kafka_topic=topic,
        kafka_options={"delivery_timeout_ms": 4000, "request_timeout_ms": 2000, "max_block_ms": 500},
        max_queue_spans=6000,
    )
    n = 3000
    try:
        for i in range(200):  # warm up: producer connected, topic metadata known
            rag_call(f"warm {i}")
        assert flush(timeout_s=30)

        def timed_run(tag: str) -> float:
            start = time.perf_counter()
            for i in range(n):
                assert rag_call(f"{tag} {i}").endswith("[2].")
            return (time.perf_counter() - start) / n

        up = timed_run("up")
        flush(timeout_s=30)
        dropped_before = stats()["spans_dropped"]
        # Stop the broker while the application is serving: calls go on during the shutdown ...
        stopper = threading.Thread(target=kafka_broker.stop)
        stopper.start()
        served_during_stop = 0
        try:
            while stopper.is_alive():
                assert rag_call(f"stopping {served_during_stop}").endswith("[2].")
                served_during_stop += 1
            stopper.join()
            # ... and the per-call figure is taken once it is fully down.
            down = timed_run("down")
            deadline = time.monotonic() + 40
            while stats()["spans_dropped"] == dropped_before and time.monotonic() < deadline:
                rag_call("still serving")
                time.sleep(0.2)
            dropped = stats()["spans_dropped"] - dropped_before
        finally:
            stopper.join()  # never start the broker while its stop is still in progress
            kafka_broker.start()
        # The agent recovers by itself once the broker is back.
        for i in range(20):
            rag_call(f"after {i}")
        assert flush(timeout_s=60)
        exported = stats()["spans_exported"]
    finally:
        shutdown()
    print(
        f"per call: broker up {up * 1e6:.1f} us, broker down {down * 1e6:.1f} us, ratio {down / up:.2f}; "
        f"{served_during_stop} calls served while the broker was stopping; {dropped} spans dropped and counted"
    )
    assert served_during_stop > 0
    assert dropped > 0, stats()
    assert down / up <= 2.0, (up, down)
    # Every acknowledged span is read back, so the calls made after the restart (the log's tail)
    # are among them.
    records = consume(kafka_broker.bootstrap, topic, exported, timeout=60)
    queries = {
        attrs_of(s).get("input.value")
        for _p, _k, data, _r in records
        for s in spans_of(data)
        if s.name == "answer"
    }
    assert {f"after {i}" for i in range(20)} <= queries


SECRETS = [
    "alice.smith@example.com",
    "+1 415 555 0132",
    "4111 1111 1111 1111",
    "sk-proj-Abcdef1234567890XYZabc",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "xoxb-123456789012-abcdefghijkl",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "Bearer abcdefghijklmnopqrstuvwxyz012345",
]


def _seeded_run(i: int) -> None:
    @retrieval(name="search")
    def leaky_search(query):
        return [
            {
                "id": "S1",
                "content": f"Contact {SECRETS[0]} or call {SECRETS[1]}.",
                "metadata": {"owner": SECRETS[0]},
            },
            {
                "id": "S2",
                "content": f"Card {SECRETS[2]} and key {SECRETS[3]} and {SECRETS[4]}.",
                "score": 0.5,
            },
        ]

    @generation(name="complete", model="m")
    def leaky_complete(prompt):
        return f"Use token {SECRETS[5]} with {SECRETS[6]} [1]."

    @trace_rag(name="answer")
    def leaky_rag(query, user_id):
        leaky_search(query)
        from ragpulse.agent import current_rag

        current_rag().set_attribute("app.note", f"auth {SECRETS[8]}")
        return leaky_complete(query) + f" jwt {SECRETS[7]}"

    @trace_rag(name="failing")
    def failing(query):
        raise ValueError(f"could not reach {SECRETS[0]} with {SECRETS[3]}")

    leaky_rag(f"my mail is {SECRETS[0]}, card {SECRETS[2]} {i}", user_id="u1")
    with pytest.raises(ValueError):
        failing("x")


@pytest.mark.parametrize("redact", [True, False])
def test_seeded_secrets_never_reach_kafka_with_redaction(kafka_broker, topic, redact):
    configure(
        exporter="kafka", kafka_bootstrap_servers=kafka_broker.bootstrap, kafka_topic=topic, redact=redact
    )
    try:
        for i in range(5):
            _seeded_run(i)
        assert flush(timeout_s=30)
    finally:
        shutdown()
    records = consume(kafka_broker.bootstrap, topic, 5 * 4)
    blob = b"\n".join(raw for _p, _k, _d, raw in records)
    assert b"Contact" in blob  # the content itself did arrive
    leaked = [s for s in SECRETS if s.encode() in blob]
    if redact:
        assert leaked == []
        assert b"[REDACTED:EMAIL]" in blob and b"[REDACTED:CARD_NUMBER]" in blob
    else:
        assert leaked == SECRETS  # the control run proves the check can see a leak


FORK_SCRIPT = textwrap.dedent(
    """
    import os, sys, json
    from ragpulse.agent import configure, flush, stats, trace_rag, retrieval

    @retrieval(name="search")
    def search(query):
        return [{"id": "F1", "content": "fork chunk"}]

    @trace_rag(name="answer")
    def rag(query):
        search(query)
        return "ok [1]"

    configure(exporter="kafka", kafka_bootstrap_servers=sys.argv[1], kafka_topic=sys.argv[2],
              schedule_delay_ms=60000, export_batch_spans=100000)
    for i in range(5):
        rag(f"parent-before-{i}")
    flush(30)                      # the parent's producer is connected before the fork
    for i in range(5):
        rag(f"parent-queued-{i}")  # still queued in the parent when it forks
    pid = os.fork()
    if pid == 0:
        for i in range(20):
            rag(f"child-{i}")
        ok = flush(30)
        s = stats()
        os._exit(0 if ok and s["spans_dropped"] == 0 and s["spans_exported"] == 40 else 3)
    _, status = os.waitpid(pid, 0)
    ok = flush(30)
    print(json.dumps({"child_status": status, "parent_flush": ok, "parent": stats()}))
    """
)


def test_fork_child_exports_on_its_own_without_duplicating_parent_queue(kafka_broker, topic):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT, kafka_broker.bootstrap, topic],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["child_status"] == 0, result
    assert result["parent"]["spans_exported"] == 20 and result["parent"]["spans_dropped"] == 0
    records = consume(kafka_broker.bootstrap, topic, 60)
    queries = [
        attrs_of(s)["input.value"]
        for _p, _k, data, _r in records
        for s in spans_of(data)
        if s.name == "answer"
    ]
    expected = (
        [f"parent-before-{i}" for i in range(5)]
        + [f"parent-queued-{i}" for i in range(5)]
        + [f"child-{i}" for i in range(20)]
    )
    assert sorted(queries) == sorted(
        expected
    )  # each exactly once: the child did not re-send the parent's queue
