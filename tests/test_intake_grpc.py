"""OTLP/gRPC into a real ``ragpulse collect --no-kafka`` process, from the real OpenTelemetry exporters.

The interop applications (ragpulse's agent under the application's own provider, and an
OpenInference-instrumented LangChain chain) export through the real
``opentelemetry-exporter-otlp-proto-grpc`` exporter, plaintext and gzip-compressed, and the same
applications through the OTLP/HTTP exporter beside them: every trace must be stored as the
application produced it and judged, whichever way it came (the checks of tests/interop.py).
Without the bearer token the intake answers UNAUTHENTICATED and stores nothing; the scheme
is matched in any case (``bearer``). The
applications call only ``provider.shutdown()``, never ``agent.flush()``: the provider's own
shutdown delivers the agent's deferred spans. The process is started once for the module and
stopped by PID; the stored traces are read after it stopped (a chDB database has one owner).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.collector.demo.synthetic import make_trace, traces_data

from tests.grpc_intake import Collect, Stored, collect, grpc_call, grpc_exporter
from tests.interop import CORPUS, QUESTION, RIGHT, SCORES, WRONG, Expected, check_stored

pytest.importorskip("langchain_core")

TOKEN = "grpc-intake-token"


class Sent:
    """What the module sent and must find stored: (trace id, expectation, source, failure mode)."""

    def __init__(self) -> None:
        self.interop: list[tuple[str, Expected, str, str]] = []
        self.plain: set[str] = set()  # synthetic traces: stored, no expectation beyond that
        self.refused: set[str] = set()  # sent without the token: never stored


@pytest.fixture(scope="module")
def intake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Collect, Sent]]:
    tmp = tmp_path_factory.mktemp("grpc-intake")
    sent = Sent()
    with collect(tmp, token=TOKEN) as c:
        yield c, sent
    stored = Stored(c.db)
    try:
        ids = set(stored.trace_ids())
        assert ids == {t for t, *_ in sent.interop} | sent.plain
        assert not ids & sent.refused
        for trace_id, want, source, failure_mode in sent.interop:
            check_stored(stored, trace_id, want, source, failure_mode)
    finally:
        stored.close()


def _run_apps(c: Collect, protocol: str) -> dict[str, Any]:
    """The applications in a process of their own (tests/grpc_apps.py); what they produced."""
    import json
    import subprocess
    import sys

    endpoint = c.http if protocol == "http" else c.grpc
    out = subprocess.run([sys.executable, "-m", "tests.grpc_apps", protocol, endpoint, TOKEN],
                         capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent.parent)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("protocol", ["http", "grpc", "grpc-gzip"])
def test_interop_apps_are_stored_and_judged_whichever_way_they_come(
    intake: tuple[Collect, Sent], protocol: str
) -> None:
    c, sent = intake
    wire = "http" if protocol == "http" else "grpc"
    before = c.metric("ragpulse_intake_spans_total", protocol=wire)
    app = _run_apps(c, protocol)
    assert app["answers"] == [RIGHT, WRONG, RIGHT, WRONG]
    assert len(app["roots"]) == 4, app
    ids = ["C1", "C2", "C3"]
    contents = [text for text, _ in CORPUS]
    ours = [Expected(QUESTION, a, ids, contents, list(SCORES)) for a in (RIGHT, WRONG)]
    theirs = [Expected(QUESTION, a, ["1", "2", "3"], contents, [None, None, None]) for a in (RIGHT, WRONG)]
    modes = ["healthy", "generation"]
    for trace_id, want, source, mode in zip(
        app["roots"], ours + theirs, ["ragpulse"] * 2 + ["openinference"] * 2, modes * 2, strict=True
    ):
        sent.interop.append((trace_id, want, source, mode))
    c.until("the intake accepted every span", lambda: c.metric("ragpulse_intake_spans_total", protocol=wire)
            >= before + app["spans"])  # fmt: skip


def _synthetic(seed: str, n: int = 1) -> tuple[bytes, list[str]]:
    traces = [make_trace(i, seed=seed) for i in range(n)]
    return traces_data([(t.service, t.spans) for t in traces]), [t.hex for t in traces]


def test_without_the_token_unauthenticated_and_nothing_stored(intake: tuple[Collect, Sent]) -> None:
    from opentelemetry.sdk.trace.export import SpanExportResult

    c, sent = intake
    before = c.metric("ragpulse_intake_requests_total", protocol="grpc", result="unauthenticated")
    body, ids = _synthetic("no-token", 3)
    sent.refused.update(ids)
    assert grpc_call(c, body)[0] == grpc.StatusCode.UNAUTHENTICATED
    assert grpc_call(c, body, token="wrong")[0] == grpc.StatusCode.UNAUTHENTICATED
    # The real exporter: UNAUTHENTICATED is not retryable, the export fails at once.
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("rag"):
        pass
    spans = memory.get_finished_spans()
    sent.refused.add(format(spans[0].context.trace_id, "032x"))
    assert grpc_exporter(c).export(spans) is SpanExportResult.FAILURE
    after = c.metric("ragpulse_intake_requests_total", protocol="grpc", result="unauthenticated")
    assert after - before == 3
    # and with the token the same body is accepted
    code, out = grpc_call(c, body, token=TOKEN)
    assert (
        code == grpc.StatusCode.OK
        and ExportTraceServiceResponse.FromString(out) == ExportTraceServiceResponse()
    )
    sent.refused.difference_update(ids)
    sent.plain.update(ids)


def test_the_bearer_scheme_is_matched_in_any_case(intake: tuple[Collect, Sent]) -> None:
    """RFC 7235: the scheme is case-insensitive (``bearer <token>``, as some clients write it)."""
    c, sent = intake
    for scheme in ("bearer", "BEARER"):
        body, ids = _synthetic(f"scheme-{scheme}")
        assert grpc_call(c, body, token=TOKEN, scheme=scheme)[0] == grpc.StatusCode.OK, scheme
        sent.plain.update(ids)
    body, ids = _synthetic("scheme-basic")
    sent.refused.update(ids)
    assert grpc_call(c, body, token=TOKEN, scheme="Basic")[0] == grpc.StatusCode.UNAUTHENTICATED


def test_some_spans_rejected_is_a_partial_success(intake: tuple[Collect, Sent]) -> None:
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    c, sent = intake
    body, ids = _synthetic("partial")
    doc = TracesData.FromString(body)
    bad = doc.resource_spans[0].scope_spans[0].spans.add()
    bad.trace_id = b"\x01" * 5  # not 16 bytes
    bad.span_id = b"\x02" * 8
    bad.name = "broken"
    code, out = grpc_call(c, doc.SerializeToString(), token=TOKEN)
    assert code == grpc.StatusCode.OK, out
    resp = ExportTraceServiceResponse.FromString(out)
    assert resp.partial_success.rejected_spans == 1 and resp.partial_success.error_message
    sent.plain.update(ids)
    # every span rejected: INVALID_ARGUMENT, nothing to retry
    only_bad = TracesData()
    only_bad.resource_spans.add().scope_spans.add().spans.append(bad)
    code, details = grpc_call(c, only_bad.SerializeToString(), token=TOKEN)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "no usable span" in details
    # an empty request is a success that stores nothing, as the OpenTelemetry Collector answers it
    assert grpc_call(c, b"", token=TOKEN)[0] == grpc.StatusCode.OK


def test_storage_down_the_exporter_retries_and_nothing_is_lost(tmp_path: Path) -> None:
    """The disk fills (tests/test_faults_storage.py's ballast under chDB's keep_free_space_bytes):
    the intake answers UNAVAILABLE with RetryInfo while storing fails, the real exporter retries
    after it, and once the space is back every trace is stored exactly once."""
    import os
    import shutil
    import threading

    from opentelemetry.sdk.trace.export import SpanExportResult

    from tests.test_faults_storage import BALLAST, HEADROOM, _chdb_config

    keep_free = shutil.disk_usage(tmp_path).free - HEADROOM
    cfg = _chdb_config(tmp_path / "chdb.xml", keep_free)
    provider = TracerProvider(resource=Resource.create({"service.name": "outage-app"}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("outage")

    def batch(n: int) -> list[Any]:
        memory.clear()
        for i in range(n):
            with tracer.start_as_current_span("rag", attributes={"openinference.span.kind": "CHAIN",
                                                                 "input.value": f"q{i}", "output.value": "a"}):  # fmt: skip
                with tracer.start_as_current_span("retrieve", attributes={"openinference.span.kind": "RETRIEVER",
                                                                          "retrieval.documents.0.document.id": "D1"}):  # fmt: skip
                    pass
        return list(memory.get_finished_spans())

    ballast = tmp_path / "ballast"
    with collect(tmp_path, judge=False, dsn_options=f"?config-file={cfg}") as c:
        first, second = batch(5), batch(5)
        exporter = grpc_exporter(c, timeout=120)
        try:
            fd = os.open(ballast, os.O_CREAT | os.O_WRONLY, 0o600)
            try:
                os.posix_fallocate(fd, 0, BALLAST)
            finally:
                os.close(fd)
            # accepted into the pipeline's queue; storing it fails and the intake starts refusing
            assert exporter.export(first) is SpanExportResult.SUCCESS
            c.until("storage down", lambda: c.metric("ragpulse_storage_up") == 0, 90)
            result: list[Any] = []
            sender = threading.Thread(target=lambda: result.append(exporter.export(second)))
            sender.start()
            c.until("the exporter retried twice", lambda: c.metric(
                "ragpulse_intake_requests_total", protocol="grpc", result="unavailable") >= 2, 60)  # fmt: skip
            assert not result  # still retrying
        finally:
            ballast.unlink(missing_ok=True)
        sender.join(120)
        assert result == [SpanExportResult.SUCCESS]
        c.until("every trace stored", lambda: c.metric("ragpulse_traces_stored_total") >= 10, 90)
        exporter.shutdown()
    want = {format(s.context.trace_id, "032x") for s in first + second}
    stored = Stored(c.db)
    try:
        rows = stored.st.query("SELECT trace_id, count() FROM {db}.rag_traces FINAL GROUP BY trace_id")
    finally:
        stored.close()
    assert {r[0] for r in rows} == want and all(r[1] == 1 for r in rows)
