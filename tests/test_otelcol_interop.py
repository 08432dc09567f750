"""A real OpenTelemetry Collector v0.165 between an application and ragpulse, with the two
configurations of docs/collector.md ("Through an OpenTelemetry Collector"), read from the page:

* spans from the OTel SDK -> otelcol (otlp receiver, batch, kafka exporter: ``ragpulse.spans``,
  ``otlp_proto``, ``partition_traces_by_id``) -> the real Kafka broker -> ``ragpulse collect``;
* spans from the OTel SDK -> otelcol (otlp receiver, batch, otlp_http exporter with the bearer
  token) -> the collector's OTLP/HTTP intake;
* spans from the OTel SDK -> otelcol (otlp receiver, batch, otlp_grpc exporter, plaintext, gzip,
  the token as ``authorization`` metadata) -> the collector's OTLP/gRPC intake.

Each stored trace must equal what the application sent. The collector binary is built by
``make interop`` (scripts/provision.sh otelcol: the OpenTelemetry Collector Builder from the Go
module proxy, about 5.5 minutes cold on 2 cores) and cached in .cache/bin; without it these
tests skip and say so.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ragpulse.agent import conventions as sc

from tests.services import KafkaBroker, ManagedProcess, free_port

ROOT = Path(__file__).resolve().parent.parent
OTELCOL = ROOT / ".cache" / "bin" / "otelcol-ragpulse"
DOC = ROOT / "docs" / "collector.md"
TOKEN = "interop-token"

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(
        not OTELCOL.exists(),
        reason="no OpenTelemetry Collector binary in .cache/bin: run `make interop` (builds it with ocb, "
        "about 5.5 minutes cold) to run the real-otelcol interop tests",
    ),
]

CHUNKS = [("C1", "Transaction logs are retained for five years.", 0.91),
          ("C2", "Contact records are corrected on request.", 0.42)]  # fmt: skip


def doc_config(name: str) -> dict[str, Any]:
    """The otelcol configuration that docs/collector.md marks ``<!-- otelcol-config: NAME -->``."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(rf"<!-- otelcol-config: {name} -->\n```yaml\n(.*?)```", text, re.S)
    assert m, f"docs/collector.md has no otelcol-config {name}"
    return yaml.safe_load(m.group(1))


class Otelcol:
    """One otelcol process on a config written from the doc's, stopped by PID."""

    def __init__(self, config: dict[str, Any], workdir: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        config["receivers"]["otlp"]["protocols"]["http"]["endpoint"] = f"127.0.0.1:{self.port}"
        # its own telemetry would claim port 8888; the tests do not read it
        config["service"]["telemetry"] = {"metrics": {"level": "none"}}
        path = workdir / "otelcol.yaml"
        path.write_text(yaml.safe_dump(config))
        import os

        self.process = ManagedProcess(
            "otelcol",
            [str(OTELCOL), "--config", str(path)],
            workdir / "otelcol.log",
            env={**os.environ, **(env or {})},
        )

    def start(self) -> Otelcol:
        import socket

        self.process.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.running(), self.process.log_tail()
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.2)
        raise AssertionError(f"otelcol did not listen:\n{self.process.log_tail()}")

    def stop(self) -> None:
        self.process.stop()


def _send_traces(endpoint: str, n: int) -> dict[str, dict[str, Any]]:
    """n RAG calls through the real OTel SDK's OTLP/HTTP exporter; what the app sent, by trace id."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "interop-app"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    tracer = provider.get_tracer("interop")
    sent: dict[str, dict[str, Any]] = {}
    for i in range(n):
        query = f"How long are transaction logs kept? ({i})"
        answer = "Transaction logs are retained for five years [1]."
        with tracer.start_as_current_span("rag", attributes={
            sc.SPAN_KIND: sc.KIND_CHAIN, sc.RAG_ROOT: True, sc.INPUT_VALUE: query, sc.OUTPUT_VALUE: answer,
            sc.RAG_CITATION_COUNT: 1,
        }) as root:  # fmt: skip
            with tracer.start_as_current_span("retrieve") as r:
                r.set_attribute(sc.SPAN_KIND, sc.KIND_RETRIEVER)
                for k, (cid, text, score) in enumerate(CHUNKS):
                    r.set_attribute(sc.document_key(sc.RETRIEVAL_DOCUMENTS, k, "id"), cid)
                    r.set_attribute(sc.document_key(sc.RETRIEVAL_DOCUMENTS, k, "content"), text)
                    r.set_attribute(sc.document_key(sc.RETRIEVAL_DOCUMENTS, k, "score"), score)
            with tracer.start_as_current_span("generate") as g:
                g.set_attributes(
                    {sc.SPAN_KIND: sc.KIND_LLM, sc.GEN_AI_REQUEST_MODEL: "scripted", sc.OUTPUT_VALUE: answer}
                )
            root.add_event(sc.CITATION_EVENT, {sc.CITATION_DOCUMENT_ID: "C1", sc.CITATION_MARKER: "[1]",
                                               sc.CITATION_START: 0, sc.CITATION_END: 48})  # fmt: skip
            ctx = root.get_span_context()
            sent[format(ctx.trace_id, "032x")] = {
                "root": format(ctx.span_id, "016x"),
                "query": query,
                "answer": answer,
            }
    provider.shutdown()  # flushes to otelcol
    return sent


_STORED = (
    "SELECT trace_id, root_span_id, service, query, answer, chunk_ids, chunk_contents, chunk_scores, "
    "citation_doc_ids, citation_markers, citation_starts, citation_ends, complete FROM {db}.rag_traces FINAL"
)


def _check_stored(rows: list[Any], sent: dict[str, dict[str, Any]]) -> None:
    stored = {r[0]: r for r in rows}
    assert set(stored) == set(sent)
    for tid, app in sent.items():
        (_, root, service, query, answer, ids, contents, scores, cdocs, cmarks, cstarts, cends, complete) = (
            stored[tid]
        )
        assert (root, service, query, answer, complete) == (
            app["root"],
            "interop-app",
            app["query"],
            app["answer"],
            1,
        )
        assert (ids, contents, scores) == (
            [c[0] for c in CHUNKS],
            [c[1] for c in CHUNKS],
            [c[2] for c in CHUNKS],
        )
        assert (cdocs, cmarks, cstarts, cends) == (["C1"], ["[1]"], [0], [48])


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def test_kafka_exporter_into_ragpulse_collect(kafka_broker: KafkaBroker, workdir: Path) -> None:
    from kafka import KafkaConsumer

    from tests.test_collector_kafka import CollectorProcess

    config = doc_config("kafka")
    assert config["exporters"]["kafka"]["traces"] == {"topic": "ragpulse.spans", "encoding": "otlp_proto"}
    config["exporters"]["kafka"]["brokers"] = [kafka_broker.bootstrap]
    kafka_broker.create_topic("ragpulse.spans", 2)
    suffix = uuid.uuid4().hex[:8]
    collect = {
        "kafka": {"bootstrap_servers": kafka_broker.bootstrap, "spans_topic": "ragpulse.spans",
                  "judge_topic": f"ij-{suffix}", "deadletter_topic": f"id-{suffix}", "group_id": f"ic-{suffix}"},
        "storage": {"dsn": f"chdb://{workdir / 'chdb'}", "batch_max_seconds": 0.5},
        "assembly": {"timeout_s": 2.0}, "metrics": {"port": 0}, "judge": {"enabled": False},
    }  # fmt: skip
    (workdir / "collect.yaml").write_text(yaml.safe_dump(collect))
    otelcol = Otelcol(config, workdir).start()
    proc = CollectorProcess(workdir / "collect.yaml", workdir / "collect.log", role="ingest")
    try:
        proc.start()
        proc.wait_ready(90)
        sent = _send_traces(f"http://127.0.0.1:{otelcol.port}", 5)
        rows = _wait_rows(workdir / "chdb", proc, len(sent))
    finally:
        otelcol.stop()
        proc.cleanup()  # _wait_rows stopped it; this reaps it if anything failed before
    _check_stored(rows, sent)
    consumer = KafkaConsumer("ragpulse.spans", bootstrap_servers=kafka_broker.bootstrap,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)  # fmt: skip
    try:
        keys = {rec.key for rec in consumer}
    finally:
        consumer.close()
    assert {k.decode() for k in keys} >= set(sent)  # partition_traces_by_id: keyed by the hex trace id


def _wait_rows(db: Path, proc: Any, count: int) -> list[Any]:
    """Stop the collector once it stored ``count`` traces (chDB allows one owner), then read them."""
    import urllib.request

    from ragpulse.collector.storage.clickhouse import Storage

    url = proc.wait_ready(30)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
            m = re.search(r"^ragpulse_traces_stored_total (\S+)$", resp.read().decode(), re.M)
        if m and float(m.group(1)) >= count:
            break
        time.sleep(0.3)
    rc, _ = proc.terminate()
    assert rc == 0, proc.log_tail()
    st = Storage(f"chdb://{db}")
    try:
        return [tuple(r) for r in st.query(_STORED)]
    finally:
        st.close()


def _intake(workdir: Path, **port: int) -> Any:
    """An embedded collector (a context manager that starts and stops it) whose intake
    (``receiver_port=0`` or ``grpc_port=0``) asks for TOKEN; nothing is sampled for judging."""
    from ragpulse.collector.embedded.collector import EmbeddedCollector

    return EmbeddedCollector(
        workdir / "db", config={"sampling": {"rate": 0.0, "rules": []}, "receiver": {"auth_token": TOKEN}},
        metrics_port=None, judge=None, install_sink=False, **port,
    )  # fmt: skip


def _through_otelcol(
    config: dict[str, Any], workdir: Path, collector: Any
) -> tuple[dict[str, dict[str, Any]], list[Any]]:
    """Five traces through an otelcol on ``config`` (the token in its environment), then flush
    ``collector`` until it stored them all (60 s at most): what the application sent, and the
    stored rows."""
    otelcol = Otelcol(config, workdir, env={"RAGPULSE_INTAKE_TOKEN": TOKEN}).start()
    try:
        sent = _send_traces(f"http://127.0.0.1:{otelcol.port}", 5)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert collector.flush(30)
            rows = collector.storage.query(_STORED)
            if len(rows) >= len(sent):
                break
            time.sleep(0.3)
    finally:
        otelcol.stop()
    return sent, [tuple(r) for r in rows]


def test_otlphttp_exporter_into_the_intake_with_its_token(workdir: Path) -> None:
    config = doc_config("otlphttp")
    (exporter,) = config["exporters"].values()
    assert exporter["headers"] == {"authorization": "Bearer ${env:RAGPULSE_INTAKE_TOKEN}"}
    with _intake(workdir, receiver_port=0) as collector:
        exporter["traces_endpoint"] = collector.receiver_url + "/v1/traces"
        sent, rows = _through_otelcol(config, workdir, collector)
    _check_stored(rows, sent)


def test_otlp_grpc_exporter_into_the_grpc_intake_with_its_token(workdir: Path) -> None:
    config = doc_config("otlp_grpc")
    (exporter,) = config["exporters"].values()
    assert exporter["headers"] == {"authorization": "Bearer ${env:RAGPULSE_INTAKE_TOKEN}"}
    assert exporter["tls"] == {"insecure": True} and exporter["compression"] == "gzip"
    with _intake(workdir, grpc_port=0) as collector:
        exporter["endpoint"] = f"127.0.0.1:{collector.grpc_receiver.port}"
        sent, rows = _through_otelcol(config, workdir, collector)
        requests = collector.metrics.registry.get_sample_value(
            "ragpulse_intake_requests_total", {"protocol": "grpc", "result": "ok"}
        )
    _check_stored(rows, sent)
    assert requests is not None and requests >= 1  # it came over gRPC
