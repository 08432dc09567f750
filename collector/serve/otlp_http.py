"""OTLP/HTTP trace receiver: ``POST /v1/traces`` with protobuf or JSON bodies.

This is the standard OTel exporter's wire format (``application/x-protobuf``
or ``application/json``, optionally gzip-compressed), so any OTel SDK can send
to the collector without Kafka. Decoded spans go to a callback (the embedded
pipeline's queue, or a Kafka producer in service mode). Responses follow the
OTLP/HTTP spec: 200 with an ``ExportTraceServiceResponse`` (with
``partial_success`` when spans were rejected; also for a request without any
span, as the OTel Collector answers it), 400 for undecodable bodies, 503 with
Retry-After when the pipeline's queue is full, its storage is down or the Kafka
forward fails, 415 for other media types, 401 without the configured bearer token
(:mod:`.bearer`). Admission, decoding, handing on and the answer's body are shared with
the gRPC intake (:mod:`.otlp_request`).
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from .http_server import BackgroundHTTPServer, QuietHandler, send
from .inflight import Hold, InflightBytes
from .intake_body import DRAIN_MAX_BYTES, IntakeRejected, declared_length, discard, inflate, read_body
from .otlp_request import OtlpIntake, export_response, partial_message

__all__ = ["OtlpHttpReceiver"]


class OtlpHttpReceiver(BackgroundHTTPServer):
    """A small threaded HTTP server handing requests to an :class:`.otlp_request.OtlpIntake`."""

    thread_name = "ragpulse-otlp-http"

    def __init__(
        self, intake: OtlpIntake, host: str, port: int, read_timeout_s: float, max_inflight_bytes: int
    ) -> None:
        """``intake`` is shared with the OTLP/gRPC receiver (its ``raw_submit`` gets the validated
        body as ``proto`` or ``json``). ``read_timeout_s`` bounds the time to receive one request's
        headers or its whole body; ``max_inflight_bytes`` the body bytes all requests together may
        hold (see inflight.py). The settings of the ``receiver`` config section, whose defaults
        are default_config.yaml's (port 0 picks a free one)."""
        self.intake = intake
        self.read_timeout_s = read_timeout_s
        self.limits = intake.limits
        self.inflight = InflightBytes(max_inflight_bytes)
        intake.metrics.intake_inflight.read_from(lambda: self.inflight.held)
        outer = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"
            timeout = read_timeout_s  # socket timeout: a silent client cannot hold its thread forever

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                with outer.inflight.request() as hold:
                    outer._handle(self, hold)

        self._bind(host, port, Handler)

    # -- request handling

    def _handle(self, req: BaseHTTPRequestHandler, hold: Hold) -> None:
        path = req.path.split("?", 1)[0]
        ctype = (req.headers.get("Content-Type") or "application/x-protobuf").split(";")[0].strip().lower()
        is_json = ctype == "application/json"
        try:
            # Refused before the body is read: drained (bounded) so the client sees the answer.
            self.intake.admit(
                req.headers.get("Authorization"), _declared_or_zero(req.headers.get("Content-Length"))
            )
            body = self._read(req, hold)
        except IntakeRejected as exc:
            return self._refuse(req, exc, is_json)
        if path != "/v1/traces":
            return _reply(req, 404, b"not found\n", "text/plain")
        if not is_json and ctype not in ("application/x-protobuf", "application/protobuf"):
            return _reply(req, 415, b"unsupported media type\n", "text/plain")
        try:
            body = inflate(body, req.headers.get("Content-Encoding") or "", self.limits.max_record_bytes)
            result = self.intake.accept("http", body, is_json)
        except IntakeRejected as exc:
            return self._refuse(req, exc, is_json)
        if result is None:
            return _reply(req, 200, *_success(is_json))
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

    def _refuse(self, req: BaseHTTPRequestHandler, exc: IntakeRejected, is_json: bool) -> None:
        """Answer a refused request; close the connection when its body was not read to the end."""
        self.intake.metrics.intake_result("http", exc.result)
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
