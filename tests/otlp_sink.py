"""An OTLP/HTTP receiver in its own process, for tests: it decodes what arrives and writes it
down, so a test checks what an OTel backend would receive.

``python tests/otlp_sink.py OUT_DIR`` serves ``POST /v1/logs`` and ``POST /v1/traces``
(protobuf, gzip or not) on a free loopback port, writes the port to ``OUT_DIR/port``, and
appends one JSON line per decoded log record to ``OUT_DIR/logs.jsonl`` and per span to
``OUT_DIR/spans.jsonl`` (ids as hex, attributes as plain values). :class:`OtlpSink` starts and
stops it by PID and reads those files.
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["OtlpSink"]


def _value(v: Any) -> Any:
    """An OTLP AnyValue as a plain Python value."""
    kind = v.WhichOneof("value")
    if kind in ("array_value", "kvlist_value"):
        return MessageToDict(getattr(v, kind))
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def _log_lines(body: bytes) -> list[dict[str, Any]]:
    req = ExportLogsServiceRequest()
    req.ParseFromString(body)
    out = []
    for rl in req.resource_logs:
        for sl in rl.scope_logs:
            for r in sl.log_records:
                out.append({
                    "resource": _attrs(rl.resource.attributes), "scope": sl.scope.name,
                    "event_name": r.event_name, "trace_id": r.trace_id.hex(), "span_id": r.span_id.hex(),
                    "time_unix_nano": r.time_unix_nano, "severity_number": r.severity_number,
                    "attributes": _attrs(r.attributes),
                })  # fmt: skip
    return out


def _span_lines(body: bytes) -> list[dict[str, Any]]:
    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    return [
        {"resource": _attrs(rs.resource.attributes), "name": s.name, "trace_id": s.trace_id.hex(),
         "span_id": s.span_id.hex(), "parent_span_id": s.parent_span_id.hex(), "attributes": _attrs(s.attributes)}
        for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]  # fmt: skip


def serve(out: Path) -> None:
    lock = threading.Lock()
    routes = {
        "/v1/logs": (_log_lines, out / "logs.jsonl", ExportLogsServiceResponse),
        "/v1/traces": (_span_lines, out / "spans.jsonl", ExportTraceServiceResponse),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server API
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
                body = gzip.decompress(body)
            route = routes.get(self.path.split("?", 1)[0])
            if route is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            decode, path, response = route
            lines = decode(body)
            with lock, path.open("a", encoding="utf-8") as f:
                f.writelines(json.dumps(line) + "\n" for line in lines)
            answer = response().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    (out / "port.tmp").write_text(str(server.server_address[1]))
    (out / "port.tmp").rename(out / "port")
    server.serve_forever()


class OtlpSink:
    """The sink process: ``url`` its base URL, :meth:`logs` / :meth:`spans` what it decoded."""

    def __init__(self, workdir: Path) -> None:
        from tests.services import ManagedProcess

        self.dir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, str(Path(__file__).resolve()), str(workdir)]
        self.process = ManagedProcess("otlp-sink", argv, workdir / "sink.log")

    def start(self, timeout: float = 30.0) -> OtlpSink:
        self.process.start()
        deadline = time.monotonic() + timeout
        while not (self.dir / "port").exists():
            if not self.process.running() or time.monotonic() > deadline:
                raise RuntimeError(f"OTLP sink did not start:\n{self.process.log_tail()}")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{(self.dir / 'port').read_text()}"
        return self

    def stop(self) -> None:
        self.process.stop()

    def _read(self, name: str) -> list[dict[str, Any]]:
        path = self.dir / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]

    def logs(self) -> list[dict[str, Any]]:
        return self._read("logs.jsonl")

    def spans(self) -> list[dict[str, Any]]:
        return self._read("spans.jsonl")

    def wait_logs(self, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        """The log records once at least ``count`` arrived (fewer after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while len(records := self.logs()) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return records

    def wait_spans(self, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(spans := self.spans()) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return spans


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
