"""OTLP/HTTP trace receiver: ``POST /v1/traces`` with protobuf or JSON bodies.

This is the standard OTel exporter's wire format (``application/x-protobuf``
or ``application/json``, optionally gzip-compressed), so any OTel SDK can send
to the collector without Kafka. Decoded spans go to a callback (the embedded
pipeline's queue, or a Kafka producer in service mode). Responses follow the
OTLP/HTTP spec: 200 with an ``ExportTraceServiceResponse`` (with
``partial_success`` when spans were rejected; also for a request without any
span, as the OTel Collector answers it), 400 for undecodable bodies, 503 with
Retry-After when the pipeline's queue is full or its storage is down, 415 for
other media types, 401 without the configured bearer token (:mod:`.bearer`).
Decoding and the answer's body are shared with the gRPC intake (:mod:`.otlp_request`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ..ingest.model import Span
from ..ingest.otlp import Limits
from .bearer import authorized
from .http_server import BackgroundHTTPServer, send
from .inflight import RETRY_AFTER_S, Hold, InflightBytes
from .intake_body import DRAIN_MAX_BYTES, IntakeRejected, declared_length, discard, inflate, read_body
from .metrics import Metrics
from .otlp_request import decode_request, export_response, partial_message

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
        port: int = 4320,
        raw_submit: Callable[[bytes, str], bool] | None = None,
        read_timeout_s: float = 10.0,
        max_inflight_bytes: int = 256 << 20,
        auth_token: str = "",
        refusing: Callable[[], str | None] = lambda: None,
    ) -> None:
        """``raw_submit(body, kind)`` (kind ``proto`` or ``json``), when given, receives the
        validated body instead of decoded spans (the Kafka service forwards it to the spans topic).
        ``read_timeout_s`` bounds the time to receive one request's headers or its whole body;
        ``max_inflight_bytes`` the body bytes all requests together may hold (see inflight.py).
        ``auth_token``, when set, is required as ``Authorization: Bearer <token>``.
        ``refusing()`` says why new requests must wait now (e.g. storage down), None when they need not."""

        def forward(body: bytes, kind: str, spans: list[Span]) -> bool:
            """Hand on an accepted request: its validated body, or its decoded spans."""
            return raw_submit(body, kind) if raw_submit is not None else submit(spans)

        self._forward = forward
        self.auth_token = auth_token
        self.read_timeout_s = read_timeout_s
        self.limits = limits
        self.metrics = metrics
        self.refusing = refusing
        self.inflight = InflightBytes(max_inflight_bytes)
        metrics.intake_inflight.read_from(lambda: self.inflight.held)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = read_timeout_s  # socket timeout: a silent client cannot hold its thread forever

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                with outer.inflight.request() as hold:
                    outer._handle(self, hold)

            def log_message(self, *args: Any) -> None:
                pass

        self._bind(host, port, Handler)

    # -- request handling

    def _handle(self, req: BaseHTTPRequestHandler, hold: Hold) -> None:
        path = req.path.split("?", 1)[0]
        ctype = (req.headers.get("Content-Type") or "application/x-protobuf").split(";")[0].strip().lower()
        is_json = ctype == "application/json"
        if not authorized(req.headers.get("Authorization"), self.auth_token):
            # Refused before the body is read: drained (bounded) so the client sees the 401.
            unread = _declared_or_zero(req.headers.get("Content-Length"))
            return self._refuse(
                req, IntakeRejected(401, "missing or wrong bearer token", True, unread), is_json
            )
        busy = self.refusing()
        if busy:
            unread = _declared_or_zero(req.headers.get("Content-Length"))
            exc = IntakeRejected(503, busy, True, unread, retry_after=RETRY_AFTER_S)
            return self._refuse(req, exc, is_json, "unavailable")
        try:
            body = self._read(req, hold)
        except IntakeRejected as exc:
            return self._refuse(req, exc, is_json)
        if path != "/v1/traces":
            return _reply(req, 404, b"not found\n", "text/plain")
        if not is_json and ctype not in ("application/x-protobuf", "application/protobuf"):
            return _reply(req, 415, b"unsupported media type\n", "text/plain")
        try:
            body = inflate(body, req.headers.get("Content-Encoding") or "", self.limits.max_record_bytes)
            result = decode_request(body, is_json, self.limits)
        except IntakeRejected as exc:
            return self._refuse(req, exc, is_json)
        if result is None:
            self.metrics.intake_result("http", "empty")
            return _reply(req, 200, *_success(is_json))
        if not self._forward(body, "json" if is_json else "proto", result.spans):
            self.metrics.intake_result("http", "throttled")
            return _reply(req, 503, *_status(503, "pipeline queue full", is_json), retry_after=RETRY_AFTER_S)
        self.metrics.intake_result("http", "ok", len(result.spans))
        if is_json:
            payload: dict[str, Any] = {}
            if result.errors:
                payload["partialSuccess"] = {
                    "rejectedSpans": str(len(result.errors)),
                    "errorMessage": partial_message(result),
                }
            return _reply(req, 200, json.dumps(payload).encode(), "application/json")
        return _reply(req, 200, export_response(result).SerializeToString(), "application/x-protobuf")

    def _read(self, req: BaseHTTPRequestHandler, hold: Hold) -> bytes:
        length = declared_length(
            req.headers.get("Content-Length"),
            req.headers.get("Transfer-Encoding"),
            self.limits.max_record_bytes,
        )
        encoded = (req.headers.get("Content-Encoding") or "identity").strip().lower() != "identity"
        hold.take(length + (self.limits.max_record_bytes if encoded else 0), unread=length)
        return read_body(req.rfile, req.connection, length, self.read_timeout_s) if length else b""

    def _refuse(
        self, req: BaseHTTPRequestHandler, exc: IntakeRejected, is_json: bool, result: str = ""
    ) -> None:
        """Answer a refused request; close the connection when its body was not read to the end."""
        self.metrics.intake_result("http", result or _RESULTS.get(exc.status, "rejected"))
        if exc.close:
            req.close_connection = True
        if 0 < exc.unread <= DRAIN_MAX_BYTES:
            discard(req.rfile, req.connection, exc.unread, self.read_timeout_s)
        body, ctype = _status(exc.status, str(exc), is_json)
        _reply(req, exc.status, body, ctype, retry_after=exc.retry_after, close=exc.close)


def _declared_or_zero(content_length: str | None) -> int:
    """The declared body length of a refused request, for draining (0 when unusable)."""
    try:
        return max(0, int((content_length or "0").strip()))
    except ValueError:
        return 0


def _success(is_json: bool) -> tuple[bytes, str]:
    """The body and media type of a full success (an empty ``ExportTraceServiceResponse``)."""
    if is_json:
        return b"{}", "application/json"
    return ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf"


# The result label of a refusal, by HTTP status (others: rejected).
_RESULTS = {401: "unauthenticated", 503: "throttled"}

# HTTP status -> google.rpc.Code carried in the protobuf error body (UNAVAILABLE otherwise).
_RPC_CODES = {400: 3, 411: 3, 415: 3, 408: 4, 413: 8, 401: 16}


def _status(code: int, message: str, is_json: bool) -> tuple[bytes, str]:
    """The body and media type of an error answer: a JSON or protobuf ``google.rpc.Status``."""
    if is_json:
        return json.dumps({"code": code, "message": message}).encode(), "application/json"
    return _rpc_status(_RPC_CODES.get(code, 14), message), "application/x-protobuf"


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
    req: BaseHTTPRequestHandler,
    code: int,
    body: bytes,
    ctype: str,
    retry_after: int | None = None,
    close: bool = False,
) -> None:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    if close:
        headers["Connection"] = "close"
    try:
        send(req, code, body, ctype, headers)
    except OSError:  # the client went away (or timed out) before the answer: nothing left to tell it
        req.close_connection = True
