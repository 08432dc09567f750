"""Collector pieces without Kafka: decoding, assembly, sampling, storage, config and CLI,
the embedded collector fed by the real agent, the OTLP/HTTP receiver, and the judge worker
with the real local judge. chDB is real; HTTP servers run on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.config import ConfigError, load_config
from ragpulse.collector.core.metrics import Metrics
from ragpulse.collector.core.model import RagTrace
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.ingest.assemble import Assembler
from ragpulse.collector.ingest.build import build_trace
from ragpulse.collector.ingest.otlp import Limits, MalformedRecord, decode_otlp_json, decode_record
from ragpulse.collector.ingest.sampling import Sampler, SamplingPolicy, looks_like_refusal, trace_hash
from ragpulse.collector.storage.clickhouse import Storage, schema_statements

from tests.services import chdb_holder, post_otlp, release

ROOT = Path(__file__).resolve().parent.parent
RAGPULSE = str(Path(sys.executable).parent / "ragpulse")  # the installed entry point


def _decoded(t: Any) -> list[Any]:
    return decode_record(traces_data([(t.service, t.spans)]), Limits()).spans


def _otlp_json(message: Any) -> dict[str, Any]:
    """A TracesData message in OTLP/JSON form: the ids as hex strings, as the spec writes them."""
    import base64

    from google.protobuf.json_format import MessageToDict

    doc = MessageToDict(message)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if sp.get(k):
                        sp[k] = base64.b64decode(sp[k]).hex()
    return doc


# ---------------------------------------------------------------- decoding and assembly


def test_protobuf_and_json_decode_to_the_same_spans() -> None:
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    t = make_trace(3, rerank=True)
    raw = traces_data([(t.service, t.spans)])
    td = TracesData()
    td.ParseFromString(raw)
    doc = _otlp_json(td)
    a = decode_record(raw, Limits()).spans
    b = decode_otlp_json(json.dumps(doc).encode(), Limits()).spans
    key = lambda s: (s.span_id, s.parent_id, s.name, s.start, s.end, s.status, s.service, s.attrs, s.events)  # noqa: E731
    assert sorted(map(key, a)) == sorted(map(key, b))
    assert len(a) == 4 and {s.trace_id for s in a} == {t.hex}


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x0a\x05garba", "protobuf"),
        (b"{not json", "invalid JSON"),
        (b"", "no OTLP"),
        (b'{"resourceSpans": []}', "no spans"),
    ],
)
def test_malformed_records_raise_with_a_reason(value: bytes, reason: str) -> None:
    with pytest.raises(MalformedRecord, match=reason):
        decode_record(value, Limits())


def test_oversized_attribute_and_span_without_ids_are_reported_not_kept() -> None:
    t = make_trace(1)
    t.spans[0].attributes[0].value.string_value = "y" * 5000
    t.spans[1].span_id = b""
    res = decode_record(traces_data([(t.service, t.spans)]), Limits(max_attribute_chars=1000))
    assert len(res.spans) == 1 and len(res.errors) == 2
    assert any("exceeds max_attribute_chars" in e for e in res.errors)
    assert any("span_id" in e for e in res.errors)


def test_attribute_json_nested_too_deeply_reads_as_no_value_instead_of_failing_the_build() -> None:
    from ragpulse.collector.core.model import Span

    deep = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError on it
    attrs = {
        "traceloop.span.kind": "workflow",
        "traceloop.entity.input": deep,
        "traceloop.entity.output": deep,
        "gen_ai.retrieval.documents": deep,
        "gen_ai.output.messages": deep,
    }
    root = Span("ab" * 16, "01" * 8, "", "chain", 1, 5, 0, "svc", attrs, [])
    llm = Span("ab" * 16, "02" * 8, "01" * 8, "llm", 2, 4, 0, "svc", {**attrs, "gen_ai.system": "openai"}, [])
    t = build_trace("ab" * 16, [root, llm])
    assert (t.query, t.answer, t.chunks, t.source) == ("", "", [], "openllmetry")


def test_assembly_any_order_separate_records_timeout_and_bounds() -> None:
    traces = [make_trace(i, rerank=True) for i in range(6)]
    asm = Assembler(timeout_s=5.0, max_traces=100)
    # Root first, then children one by one in separate records: complete only when all three kinds are in.
    for k, t in enumerate(traces):
        spans = _decoded(t)
        order = sorted(spans, key=lambda s: (bool(s.parent_id), random.Random(k).random()))
        for off, span in enumerate(order):
            asm.add([span], (0, 10 * k + off), now=1.0)
    ready = asm.pop_ready(now=1.0)
    assert {a.trace_id for a in ready} == {t.hex for t in traces}
    assert all(a.complete and a.is_rag for a in ready)
    built = {a.trace_id: build_trace(a.trace_id, a.spans) for a in ready}
    # Spans that arrive after their trace was emitted are late, not a new trace.
    asm.add(_decoded(traces[0])[:1], (0, 99), now=2.0)
    assert asm.late_spans == 1 and len(asm) == 0
    # The reranker's output wins over the raw retrieval; citations and stage latencies are read.
    tr = built[traces[0].hex]
    assert [c.id for c in tr.chunks] == traces[0].chunk_ids[:2]
    assert [c.marker for c in tr.citations] == ["[1]", "[2]", "[3]"]
    assert tr.retrieval_ms == 20.0 and tr.generation_ms == 300.0 and tr.latency_ms == 340.0
    # Timeout: a trace without a root is emitted incomplete after timeout_s; offsets stay held until then.
    t = make_trace(50)
    asm.add([s for s in _decoded(t) if s.parent_id], (1, 500), now=10.0)
    assert asm.min_positions() == {1: 500}
    assert asm.pop_ready(now=14.9) == []
    late = asm.pop_ready(now=15.1)
    assert len(late) == 1 and not late[0].complete and late[0].is_rag
    assert asm.min_positions() == {}
    # Bounded buffer: the oldest partial trace is emitted early.
    small = Assembler(timeout_s=60, max_traces=3)
    for i in range(5):
        small.add([s for s in _decoded(make_trace(100 + i)) if s.parent_id], (0, i), now=float(i))
    assert len(small) == 3 and small.evicted == 2 and len(small.pop_ready(now=5.0)) == 2


# ---------------------------------------------------------------- sampling


def _trace(i: int, **kw: Any) -> RagTrace:
    t = build_trace(make_trace(i, **kw).hex, _decoded(make_trace(i, **kw)))
    return t


def test_sampling_rate_is_deterministic_and_close_to_the_rate() -> None:
    ids = [f"{random.Random(i).getrandbits(128):032x}" for i in range(20_000)]
    hits = sum(trace_hash(h, "s") < 0.1 for h in ids)
    assert 0.09 <= hits / len(ids) <= 0.11
    assert [trace_hash(h, "s") for h in ids[:50]] == [trace_hash(h, "s") for h in ids[:50]]
    assert [trace_hash(h, "s") for h in ids[:50]] != [trace_hash(h, "t") for h in ids[:50]]


def test_rules_always_never_and_first_match_wins() -> None:
    policy = SamplingPolicy.from_config(
        {
            "rate": 0.0,
            "rules": [
                {"name": "internal", "action": "never", "match": {"service": ["internal"]}},
                {"name": "error", "action": "always", "match": {"error": True}},
                {"name": "refusal", "action": "always", "match": {"refusal": True}},
                {"name": "low", "action": "always", "match": {"top_score_below": 0.5}},
                {
                    "name": "neg",
                    "action": "always",
                    "match": {"attribute": "rag.feedback", "in": ["negative"]},
                },
                {"name": "risk", "action": "always", "match": {"risk_level": ["high"]}},
            ],
        }
    )
    s = Sampler(policy)
    assert s.decide(_trace(1)) == (False, "unsampled")
    assert s.decide(_trace(2, error=True)) == (True, "rule:error")
    assert s.decide(_trace(3, refusal=True)) == (True, "rule:refusal")
    assert s.decide(_trace(4, feedback="negative")) == (True, "rule:neg")
    assert s.decide(_trace(5, risk="high")) == (True, "rule:risk")
    assert s.decide(_trace(6, error=True, service="internal")) == (False, "never:internal")
    low = _trace(7)
    for c in low.chunks:
        c.score = 0.2
    assert s.decide(low) == (True, "rule:low")
    assert looks_like_refusal("I'm sorry, I cannot answer that from the documents.")
    assert not looks_like_refusal("Logs are retained for five years [1].")
    with pytest.raises(ValueError, match="unknown condition"):
        SamplingPolicy.from_config({"rules": [{"name": "x", "match": {"colour": "red"}}]})


def test_budget_per_minute_counts_from_storage_and_caps_rate_samples() -> None:
    policy = SamplingPolicy(rate=1.0, budget_per_minute=5)
    loaded: list[int] = []

    def loader(minute_ns: int) -> int:
        loaded.append(minute_ns)
        return 2  # two already spent in storage for every minute

    s = Sampler(policy, budget_loader=loader)
    minute = 60_000_000_000
    decisions = []
    for i in range(10):
        t = RagTrace(f"{i:032x}")
        t.time = 1000 * minute + i  # same minute
        decisions.append(s.decide(t))
    assert [d[1] for d in decisions] == ["rate"] * 3 + ["budget"] * 7
    assert loaded == [1000 * minute]


# ---------------------------------------------------------------- storage, config, CLI


def test_storage_idempotent_schema_replacing_rows_and_version(tmp_path: Path) -> None:
    st = Storage(f"chdb://{tmp_path / 'db'}", ttl_days=30)
    try:
        st.apply_schema()
        st.apply_schema()
        traces = [_trace(i) for i in range(20)]
        for t in traces:
            t.src_partition, t.src_offset = 0, 7
        st.insert_traces(traces, "spans")
        st.insert_traces(traces, "spans")  # a replay
        partial = build_trace(traces[0].trace_id, [s for s in _decoded(make_trace(0)) if s.parent_id])
        st.insert_traces([partial], "spans")  # a partial replay never replaces the complete row
        assert st.query("SELECT count(), uniqExact(trace_id) FROM {db}.rag_traces FINAL")[0] == (20, 20)
        assert st.query(
            "SELECT span_count FROM {db}.rag_traces FINAL WHERE trace_id = %(t)s", {"t": traces[0].trace_id}
        ) == [(3,)]
        assert st.read_progress("spans") == {0: 7}
        assert set(st.stored_decisions([t.trace_id for t in traces[:3]])) == {t.trace_id for t in traces[:3]}
        ddl = " ".join(schema_statements("ragpulse", 30))
        assert "INTERVAL 30 DAY" in ddl and "ReplacingMergeTree(span_count)" in ddl
        assert "TTL" not in " ".join(schema_statements("ragpulse", 0))
    finally:
        st.close()


def test_storage_rows_keep_odd_values_nan_bigint_surrogate_unicode(tmp_path: Path) -> None:
    """orjson encodes the rows; what it refuses (64-bit overflow, lone surrogates from JSON
    input) falls back to the stdlib encoder for that row, and a NaN score is stored as null."""
    st = Storage(f"chdb://{tmp_path / 'db'}")
    try:
        st.apply_schema()
        odd = [_trace(i) for i in range(3)]
        odd[0].attributes = {"big": 2**70, "note": "x"}
        odd[0].chunks[0].score = float("nan")
        odd[1].query = "lone \ud800 surrogate"
        odd[2].answer = "Ünïcödé ✓ \u2028 \x00 end"
        spans = _decoded(make_trace(5))
        for s in spans:
            if s.name == "generate":
                s.attrs.update({"gen_ai.usage.input_tokens": 2**70, "gen_ai.usage.output_tokens": -3})
        big = build_trace("f" * 32, spans)
        assert (big.input_tokens, big.output_tokens) == (2**32 - 1, 0)  # clamped to the UInt32 columns
        st.insert_traces([*odd, big], "spans")
        rows = dict(
            (r[0], r[1:])
            for r in st.query(
                "SELECT trace_id, attributes, chunk_scores[1], query, answer FROM {db}.rag_traces FINAL"
            )
        )
        assert json.loads(rows[odd[0].trace_id][0]) == {"big": 2**70, "note": "x"}
        assert rows[odd[0].trace_id][1] is None
        assert rows[odd[1].trace_id][2].startswith("lone ") and rows[odd[1].trace_id][2].endswith(
            " surrogate"
        )
        assert rows[odd[2].trace_id][3] == odd[2].answer
        assert big.trace_id in rows
    finally:
        st.close()


def test_healthz_fails_while_a_kafka_poll_is_stuck_and_recovers() -> None:
    """A poll that does not return within stall_s makes /healthz answer 503 naming the loop
    (a liveness probe then restarts the process); /readyz is unaffected."""
    import threading

    from ragpulse.collector.serve.server import MetricsServer

    metrics = Metrics()
    server = MetricsServer(metrics, port=0, stall_s=0.3).start()
    release = threading.Event()

    def stuck_poll() -> None:
        with metrics.polls.watching("judge-7"):
            release.wait(10)

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(server.url + path, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    try:
        assert get("/healthz") == (200, "ok\n")
        worker = threading.Thread(target=stuck_poll)
        worker.start()
        assert get("/healthz") == (200, "ok\n")  # a poll in progress, not yet stuck
        time.sleep(0.5)
        code, body = get("/healthz")
        assert code == 503 and body.startswith("stalled: judge-7 stuck for")
        assert get("/readyz")[0] == 200
        release.set()
        worker.join(5)
        assert get("/healthz") == (200, "ok\n")
    finally:
        release.set()
        server.stop()
    with pytest.raises(ConfigError, match="metrics.stall_s must be positive"):
        load_config(None, overrides={"metrics": {"stall_s": 0}})


def test_a_group_join_that_outlasts_the_rebalance_timeout_counts_as_stuck() -> None:
    from ragpulse.collector.core.poll_watch import PollWatch

    watch = PollWatch()
    assert watch.joining("collector", False, 1.0) == 0.0
    assert watch.joining("collector", True, 0.2) >= 0.0  # rebalancing: allowed 0.2 s (+ stall limit)
    assert watch.stuck(0.1) == {}
    time.sleep(0.4)
    assert watch.joining("collector", True, 0.2) > 0.3  # still rebalancing: the start is kept
    assert set(watch.stuck(0.1)) == {"collector (group join)"}
    assert watch.joining("collector", False, 0.2) == 0.0  # joined: cleared
    assert watch.stuck(0.1) == {}


def test_config_env_overrides_and_one_line_errors(tmp_path: Path) -> None:
    cfg = load_config(
        None, env={"RAGPULSE_SAMPLING__RATE": "0.25", "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS": "k:9092"}
    )
    assert cfg["sampling"]["rate"] == 0.25 and cfg["kafka"]["bootstrap_servers"] == "k:9092"
    bad = tmp_path / "bad.yaml"
    for text, msg in [
        ("sampling: {rate: 2}", "sampling.rate must be between 0 and 1"),
        ("storage: {dsn: mysql://x}", "storage.dsn must be"),
        ("kafka: {group_idd: x}", "unknown key kafka.group_idd"),
        ("sampling: {rules: [{name: a, action: maybe, match: {error: true}}]}", "action must be"),
        ("[1, 2", "not valid YAML"),
    ]:
        bad.write_text(text)
        with pytest.raises(ConfigError, match=msg):
            load_config(bad, env={})
    bad.write_text("sampling: {rate: 2}")
    run = subprocess.run([RAGPULSE, "collect", "--config", str(bad)],
                         capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "ragpulse collect: error: sampling.rate must be between 0 and 1, got 2"
    ]
    ok = subprocess.run([RAGPULSE, "collect", "--check"],
                        capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert ok.returncode == 0 and ok.stdout.strip() == "config ok"


def test_schema_apply_command_is_idempotent(tmp_path: Path) -> None:
    dsn = f"chdb://{tmp_path / 'db'}"
    for _ in range(2):
        run = subprocess.run([RAGPULSE, "schema", "apply", "--dsn", dsn],
                             capture_output=True, text=True, cwd=ROOT)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert "schema applied" in run.stdout
    st = Storage(dsn)
    try:
        names = {r[0] for r in st.query("SELECT name FROM system.tables WHERE database = 'ragpulse'")}
    finally:
        st.close()
    assert names == {
        "rag_traces",
        "rag_judgments",
        "rag_claims",
        "rag_feedback",
        "rag_exports",
        "rag_reviews",
        "rag_session_turns",  # views (docs/schema.md "Sessions")
        "rag_sessions",
    }


# ---------------------------------------------------------------- embedded collector, receiver, judge worker


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_embedded_collector_with_the_agent_and_the_local_judge(tmp_path: Path) -> None:
    """Agent (embedded exporter) -> EmbeddedCollector -> chDB -> local judge -> judgments, claims, metrics."""
    from ragpulse import agent
    from ragpulse.collector.embedded.collector import EmbeddedCollector

    collector = EmbeddedCollector(tmp_path / "db", config={"sampling": {"rate": 1.0}}, metrics_port=0)
    collector.start()
    try:
        agent.configure(service_name="policy-bot", exporter="embedded")
        chunks = [
            {"id": "C1", "content": "Covered institutions retain transaction logs for five years.", "score": 0.9,
             "metadata": {"status": "current", "authoritative": True}},
            {"id": "C2", "content": "Customer contact records must be corrected upon a verified request.", "score": 0.4},
        ]  # fmt: skip

        @agent.retrieval
        def search(query: str, top_k: int = 2) -> list[dict]:
            return chunks[:top_k]

        @agent.generation(model="scripted", provider="local")
        def complete(prompt: str) -> str:
            return (
                "Transaction logs are retained for five years [1]." if "logs" in prompt else "Ten days [2]."
            )

        @agent.trace_rag
        def answer(query: str) -> str:
            search(query)
            return complete(query)

        answer("How long are transaction logs kept?")
        answer("How fast are contact records corrected?")
        agent.flush()
        assert collector.flush(60)
        st = collector.storage
        rows = st.query(
            "SELECT service, query, answer, chunk_ids, sampled, complete FROM {db}.rag_traces FINAL ORDER BY query"
        )
        assert [r[0] for r in rows] == ["policy-bot", "policy-bot"] and all(
            r[4] == 1 and r[5] == 1 for r in rows
        )
        assert rows[1][3] == ["C1", "C2"]
        judged = st.query(
            "SELECT trace_id, judge_id, faithfulness, claims_total, error FROM {db}.rag_judgments FINAL ORDER BY faithfulness"
        )
        assert len(judged) == 2 and all(j[1].startswith("local-") and j[4] == "" for j in judged)
        assert judged[0][2] < judged[1][2] == 1.0
        claims = st.query(
            "SELECT verdict, supporting_chunk_ids FROM {db}.rag_claims FINAL WHERE verdict = 'supported'"
        )
        assert ("supported", ["C1"]) in claims
        status, body = _get(collector.metrics_url + "/metrics")
        assert status == 200
        judge_id = judged[0][1]
        # No rag.variant on these calls: the empty label value, which Prometheus stores as no label.
        assert (
            f'ragpulse_faithfulness_count{{judge="{judge_id}",service="policy-bot",variant=""}} 2.0' in body
        )
        assert "ragpulse_traces_stored_total 2.0" in body
        assert (
            _get(collector.metrics_url + "/healthz")[0] == 200
            and _get(collector.metrics_url + "/readyz")[0] == 200
        )
    finally:
        agent.shutdown()
        collector.stop()
    assert _get_refused(collector)


def _get_refused(collector: Any) -> bool:
    try:
        urllib.request.urlopen(collector.metrics_url + "/healthz", timeout=2)
    except OSError:
        return True
    return False


def test_judge_worker_is_idempotent_and_records_errors(tmp_path: Path) -> None:
    from ragpulse.collector.judge import get_judge
    from ragpulse.collector.judge.service.worker import JudgeWorker

    st = Storage(f"chdb://{tmp_path / 'db'}")
    try:
        st.apply_schema()
        metrics = Metrics()
        worker = JudgeWorker(get_judge("local"), st, metrics)
        msgs = []
        for i in range(5):
            t = _trace(i)
            t.sampled_reason = "rate"
            msgs.append(t.judge_message())
        for _ in range(2):  # delivered twice (at least once)
            worker.store(worker.judge_messages(msgs))
        n = st.query("SELECT count(), uniqExact(trace_id) FROM {db}.rag_judgments FINAL")[0]
        assert n == (5, 5)
        claims = st.query("SELECT count() FROM {db}.rag_claims FINAL")[0][0]
        assert claims == st.query("SELECT sum(claims_total) FROM {db}.rag_judgments FINAL")[0][0] > 0
        assert metrics.traces_judged.labels("rag-app", worker.judge.judge_id)._value.get() == 5

        class Broken:
            judge_id = "broken-1"

            def judge(self, record: dict[str, Any]) -> dict[str, Any]:
                raise RuntimeError("model unavailable")

        bad = JudgeWorker(Broken(), st, metrics)
        bad.store(bad.judge_messages(msgs[:1]))
        row = st.query("SELECT faithfulness, error FROM {db}.rag_judgments FINAL WHERE judge_id = 'broken-1'")
        assert row == [(None, "RuntimeError: model unavailable")]
        assert metrics.judge_errors.labels("rag-app", "broken-1")._value.get() == 1
    finally:
        st.close()


def test_otlp_http_receiver_protobuf_json_gzip_and_errors(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from ragpulse.collector.embedded.collector import EmbeddedCollector

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otlp-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for i in range(3):
        with tracer.start_as_current_span("rag", attributes={"openinference.span.kind": "CHAIN", "rag.root": True,
                                                             "input.value": f"q{i}", "output.value": f"a{i}"}):  # fmt: skip
            with tracer.start_as_current_span("r", attributes={"openinference.span.kind": "RETRIEVER",
                                                               "retrieval.documents.0.document.id": "D",
                                                               "retrieval.documents.0.document.content": "x"}):  # fmt: skip
                pass
            with tracer.start_as_current_span("g", attributes={"openinference.span.kind": "LLM"}):
                pass
    spans = exporter.get_finished_spans()
    by_trace: dict[int, list[Any]] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    groups = list(by_trace.values())
    collector = EmbeddedCollector(tmp_path / "db", config={"sampling": {"rate": 0.0, "rules": []}},
                                  metrics_port=None, judge=None, receiver_port=0, install_sink=False)  # fmt: skip
    collector.start()
    try:
        url = collector.receiver_url + "/v1/traces"

        def post(body: bytes, ctype: str, encoding: str | None = None) -> tuple[int, bytes]:
            return post_otlp(url, body, ctype, encoding)

        assert post(encode_spans(groups[0]).SerializeToString(), "application/x-protobuf")[0] == 200
        assert (
            post(
                gzip.compress(encode_spans(groups[1]).SerializeToString()), "application/x-protobuf", "gzip"
            )[0]
            == 200
        )
        doc = _otlp_json(encode_spans(groups[2]))
        assert post(json.dumps(doc).encode(), "application/json")[0] == 200
        code, body = post(b"\x0a\x03bad", "application/x-protobuf")
        assert code == 400 and b"protobuf" in body
        assert post(b"x", "text/plain")[0] == 415
        assert collector.flush(30)
        rows = collector.storage.query("SELECT service, query FROM {db}.rag_traces FINAL ORDER BY query")
        assert rows == [("otlp-app", "q0"), ("otlp-app", "q1"), ("otlp-app", "q2")]
    finally:
        collector.stop()
        provider.shutdown()


def test_storage_unavailable_is_retried_until_it_returns(tmp_path: Path) -> None:
    """Another process owns the chDB path: the embedded collector retries with backoff, then stores."""
    from ragpulse.collector.embedded.collector import EmbeddedCollector

    db = tmp_path / "db"
    with chdb_holder(db) as holder:
        collector = EmbeddedCollector(db, config={"storage": {"retry_initial_s": 0.1, "retry_max_s": 0.3}},
                                      metrics_port=None, judge=None, install_sink=False)  # fmt: skip
        import threading

        started = threading.Thread(target=collector.start, daemon=True)
        started.start()
        time.sleep(2.0)
        assert started.is_alive(), "start() should still be retrying while the database is held"
        retries = collector.metrics.storage_retries._value.get()
        assert retries >= 3
        release(holder)
        started.join(30)
        assert not started.is_alive()
        t = make_trace(1)
        collector.submit_decoded(_decoded(t))
        assert collector.flush(30)
        assert collector.storage.query("SELECT trace_id FROM {db}.rag_traces FINAL") == [(t.hex,)]
        collector.stop()


def test_collect_no_kafka_serves_otlp_http_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """``ragpulse collect --no-kafka``: OTLP/HTTP into an embedded database, SIGTERM flushes and exits 0."""
    import re

    from tests.services import collect_no_kafka, free_port

    port = free_port()
    cfg = {
        "storage": {"dsn": f"chdb://{tmp_path / 'db'}"}, "metrics": {"port": 0},
        "receiver": {"port": port}, "judge": {"enabled": True, "judge": "local"}, "sampling": {"rate": 1.0},
    }  # fmt: skip
    with collect_no_kafka(cfg, tmp_path / "c.yaml", stop_s=15) as (_, line):
        metrics_url = re.search(r"metrics on (http://\S+)/metrics", line)
        assert metrics_url, line
        traces = [make_trace(i, seed="nokafka") for i in range(5)]
        body = traces_data([(t.service, t.spans) for t in traces], shared_resource=True)
        assert post_otlp(f"http://127.0.0.1:{port}/v1/traces", body)[0] == 200
        assert _get(metrics_url.group(1) + "/readyz")[0] == 200
    st = Storage(f"chdb://{tmp_path / 'db'}")
    try:
        assert {r[0] for r in st.query("SELECT trace_id FROM {db}.rag_traces FINAL")} == {
            t.hex for t in traces
        }
        assert st.query("SELECT count() FROM {db}.rag_judgments FINAL")[0][0] == 5
    finally:
        st.close()
