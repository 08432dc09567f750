"""OTLP/HTTP trace receiver: ``POST /v1/traces`` with protobuf or JSON bodies.

This is the standard OTel exporter's wire format (``application/x-protobuf``
or ``application/json``, optionally gzip-compressed), so any OTel SDK can send
to the collector without Kafka. Decoded spans go to a callback (the embedded
pipeline's queue, or a Kafka producer in service mode). Responses follow the
OTLP/HTTP spec: 200 with an ``ExportTraceServiceResponse`` (with
``partial_success`` when spans were rejected), 400 for undecodable bodies,
503 with Retry-After when the pipeline's queue is full, 415 for other media
types.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ..ingest.model import Span
from ..ingest.otlp import Limits, MalformedRecord, decode_otlp_json, decode_otlp_proto
from .http_server import BackgroundHTTPServer
from .metrics import Metrics

__all__ = ["OtlpHttpReceiver"]


class OtlpHttpReceiver(BackgroundHTTPServer):
    """A small threaded HTTP server feeding decoded spans to ``submit(spans) -> bool``."""

    thread_name = "ragpulse-otlp-http"

    def __init__(
        self,
        submit: Callable[[list[Span]], bool],
        limits: Limits,
        metrics: Metrics,
        host: str = "127.0.0.1",
        port: int = 4318,
        raw_submit: Callable[[bytes, str], bool] | None = None,
    ) -> None:
        """``raw_submit(body, kind)`` (kind ``proto`` or ``json``), when given, receives the
        validated body instead of decoded spans (the Kafka service forwards it to the spans topic)."""
        self.submit = submit
        self.raw_submit = raw_submit
        self.limits = limits
        self.metrics = metrics
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                outer._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._bind(host, port, Handler)

    # -- request handling

    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        path = req.path.split("?", 1)[0]
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        if path != "/v1/traces":
            return _reply(req, 404, b"not found\n", "text/plain")
        ctype = (req.headers.get("Content-Type") or "application/x-protobuf").split(";")[0].strip().lower()
        is_json = ctype == "application/json"
        if not is_json and ctype not in ("application/x-protobuf", "application/protobuf"):
            return _reply(req, 415, b"unsupported media type\n", "text/plain")
        encoding = (req.headers.get("Content-Encoding") or "").lower()
        try:
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            elif encoding not in ("", "identity"):
                return _reply(req, 415, b"unsupported content encoding\n", "text/plain")
            if len(body) > self.limits.max_record_bytes:
                raise MalformedRecord(f"body of {len(body)} bytes exceeds max_record_bytes")
            result = decode_otlp_json(body, self.limits) if is_json else decode_otlp_proto(body, self.limits)
        except (MalformedRecord, OSError, EOFError, zlib.error) as exc:
            self.metrics.records.labels("rejected").inc()
            return _status_reply(req, 400, str(exc), is_json)
        if self.raw_submit is not None:
            accepted = self.raw_submit(body, "json" if is_json else "proto")
        else:
            accepted = self.submit(result.spans) if result.spans else True
        if not accepted:
            self.metrics.records.labels("throttled").inc()
            return _status_reply(req, 503, "pipeline queue full", is_json, retry_after=1)
        self.metrics.records.labels("ok").inc()
        resp = ExportTraceServiceResponse()
        if result.errors:
            resp.partial_success.rejected_spans = len(result.errors)
            resp.partial_success.error_message = "; ".join(result.errors[:5])[:1000]
        if is_json:
            payload: dict[str, Any] = {}
            if result.errors:
                payload["partialSuccess"] = {
                    "rejectedSpans": str(len(result.errors)),
                    "errorMessage": resp.partial_success.error_message,
                }
            return _reply(req, 200, json.dumps(payload).encode(), "application/json")
        return _reply(req, 200, resp.SerializeToString(), "application/x-protobuf")


def _status_reply(
    req: BaseHTTPRequestHandler, code: int, message: str, is_json: bool, retry_after: int | None = None
) -> None:
    if is_json:
        body = json.dumps({"code": code, "message": message}).encode()
        ctype = "application/json"
    else:
        body = _rpc_status(3 if code == 400 else 14, message)
        ctype = "application/x-protobuf"
    _reply(req, code, body, ctype, retry_after)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _rpc_status(code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` protobuf (code = field 1, message = field 2), as OTLP/HTTP errors carry."""
    msg = message.encode()[:4000]
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(msg)) + msg


def _reply(
    req: BaseHTTPRequestHandler, code: int, body: bytes, ctype: str, retry_after: int | None = None
) -> None:
    req.send_response(code)
    req.send_header("Content-Type", ctype)
    req.send_header("Content-Length", str(len(body)))
    if retry_after is not None:
        req.send_header("Retry-After", str(retry_after))
    req.end_headers()
    req.wfile.write(body)
