"""OTLP/gRPC trace receiver: ``opentelemetry.proto.collector.trace.v1.TraceService/Export``.

The default exporter of most OpenTelemetry SDKs and of the OpenTelemetry
Collector's ``otlp`` exporter speaks gRPC (port 4317). The server is grpcio's;
the service and method names come from opentelemetry-proto's descriptors. The
request reaches the handler as bytes (no protobuf parse of its own), so it takes
the same decoding path, limits and answers as the OTLP/HTTP intake
(:mod:`.otlp_request`):

* the message size limit is ``limits.max_record_bytes``, enforced by gRPC
  before the handler runs, on the message as received and, for a gzip-compressed
  message (``grpc-encoding: gzip``), as it inflates: RESOURCE_EXHAUSTED;
* a call is admitted by a server interceptor from its metadata alone, before its
  message is received (:class:`_Admission`): without ``authorization: Bearer
  <token>`` when a token is set (the same setting and check as HTTP, :mod:`.bearer`):
  UNAUTHENTICATED; while storage is down: UNAVAILABLE (see below). A refused call's
  message is never read, so an unauthenticated client cannot make the server
  receive or inflate it: what it sends before the refusal stops at a fixed HTTP/2
  window of 256 KiB per call;
* bytes that do not decode, or a request whose every span is rejected:
  INVALID_ARGUMENT; some spans rejected: OK with ``partial_success``;
* the pipeline's queue full: RESOURCE_EXHAUSTED, and storage down (or the Kafka
  forward failing): UNAVAILABLE, both with a ``google.rpc.RetryInfo`` (in the
  status details, and as ``google.rpc.retryinfo-bin``, which the Python
  exporter reads), so OTLP exporters retry after it, as the specification asks.

Requests are handled by ``workers`` threads; at most ``4 x workers`` calls are
admitted at once (gRPC answers others RESOURCE_EXHAUSTED), which bounds the
request bytes held to about that many messages of ``max_record_bytes``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf.any_pb2 import Any as AnyPb
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from .inflight import RETRY_AFTER_S
from .intake_body import IntakeRejected
from .otlp_request import OtlpIntake, export_response

__all__ = ["OtlpGrpcReceiver", "TRACE_SERVICE"]

TRACE_SERVICE = trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"]
_EXPORT = TRACE_SERVICE.methods_by_name["Export"]

# A refusal's result -> the gRPC code it is answered with (rejected: by its HTTP status).
_CODES = {
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "throttled": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
}
_REJECTED = {413: grpc.StatusCode.RESOURCE_EXHAUSTED}  # others: INVALID_ARGUMENT

# The HTTP/2 window a call's sender may fill before the server reads its message, fixed: with
# grpc's default bandwidth-delay probing the window grows on a fast link until 32 refused 8 MiB
# calls left 30-100 MB received at the server; fixed at 256 KiB they leave under 3 MB (see
# docs/collector.md). A sender then gets 256 KiB per round trip per call.
_STREAM_WINDOW = 256 << 10


class OtlpGrpcReceiver:
    """A gRPC server handing requests to an :class:`.otlp_request.OtlpIntake` (see the module docstring)."""

    def __init__(self, intake: OtlpIntake, host: str, port: int, workers: int) -> None:
        """``intake`` is shared with the OTLP/HTTP receiver (its ``raw_submit`` gets the request's
        bytes as ``"proto"``); ``workers`` threads handle the calls. The settings of the
        ``receiver`` config section, whose defaults are default_config.yaml's (port 0 picks a free one)."""
        self.intake = intake
        self._host = host
        handler = grpc.unary_unary_rpc_method_handler(
            self._export,
            request_deserializer=None,  # the bytes as received: the intake's own decoders read them
            response_serializer=trace_service_pb2.ExportTraceServiceResponse.SerializeToString,
        )
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragpulse-otlp-grpc"),
            handlers=[grpc.method_handlers_generic_handler(TRACE_SERVICE.full_name, {_EXPORT.name: handler})],
            options=[
                ("grpc.max_receive_message_length", intake.limits.max_record_bytes),
                ("grpc.max_send_message_length", 1 << 20),
                ("grpc.so_reuseport", 0),  # a second process on the same port fails to bind, as HTTP does
                ("grpc.http2.bdp_probe", 0),
                ("grpc.http2.lookahead_bytes", _STREAM_WINDOW),
            ],
            maximum_concurrent_rpcs=4 * workers,
            interceptors=[_Admission(self)],
        )
        try:
            self.port = self._server.add_insecure_port(f"{host}:{port}")
        except RuntimeError as exc:
            raise OSError(f"cannot listen for OTLP/gRPC on {host}:{port}: {exc}") from None
        if not self.port:
            raise OSError(f"cannot listen for OTLP/gRPC on {host}:{port}")

    @property
    def url(self) -> str:
        """``grpc://HOST:PORT`` (for logs; exporters take ``HOST:PORT`` or ``http://HOST:PORT``)."""
        return f"grpc://{self._host}:{self.port}"

    def start(self) -> OtlpGrpcReceiver:
        self._server.start()
        return self

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting calls; calls in progress get ``grace_s`` seconds to finish."""
        self._server.stop(grace_s).wait(grace_s + 1)

    # -- one call

    def _export(self, request: bytes, context: grpc.ServicerContext) -> Any:
        """An admitted call (see :class:`_Admission`): decode its message and hand it on."""
        try:
            return export_response(self.intake.accept("grpc", request, False))
        except IntakeRejected as exc:
            self.refuse(exc, context)

    def refuse(self, exc: IntakeRejected, context: grpc.ServicerContext) -> None:
        """Count and answer a refused call with the gRPC code of ``exc`` (raises, as ``abort`` does)."""
        self.intake.metrics.intake_result("grpc", exc.result)
        code = _CODES.get(exc.result) or _REJECTED.get(exc.status, grpc.StatusCode.INVALID_ARGUMENT)
        if exc.retry_after is not None:
            self._retry_later(context, code, str(exc))
        context.abort(code, str(exc)[:1000])

    def _retry_later(self, context: grpc.ServicerContext, code: grpc.StatusCode, why: str) -> None:
        """Refuse with ``code`` and a RetryInfo of ``RETRY_AFTER_S`` (OTLP exporters back off by it)."""
        info = RetryInfo(retry_delay=Duration(seconds=RETRY_AFTER_S))
        detail = AnyPb()
        detail.Pack(info)
        status = Status(code=code.value[0], message=f"{why}; retry later", details=[detail])
        context.set_trailing_metadata(
            (
                ("grpc-status-details-bin", status.SerializeToString()),
                ("google.rpc.retryinfo-bin", info.SerializeToString()),
            )
        )
        context.abort(code, status.message)


class _Admission(grpc.ServerInterceptor):
    """Admit or refuse each call from its metadata (:meth:`.otlp_request.OtlpIntake.admit`: the
    bearer token, then whether storage is down) before its message is received.

    grpcio receives a unary call's message before its handler runs, and an interceptor that
    answers with a unary handler would still have it read. A refused call is therefore given a
    handler taking a request *stream* that it never reads: grpcio receives nothing for it, the
    call ends with the refusal's status, and the peer's unread bytes stop at HTTP/2 flow
    control (a window, not the message)."""

    def __init__(self, receiver: OtlpGrpcReceiver) -> None:
        self._receiver = receiver

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        metadata = handler_call_details.invocation_metadata  # type: ignore[attr-defined]
        try:
            self._receiver.intake.admit(_authorization(metadata))
        except IntakeRejected as exc:
            return grpc.stream_unary_rpc_method_handler(_Refusal(self._receiver, exc))
        return continuation(handler_call_details)


class _Refusal:
    """The handler of a refused call: answers without touching the request stream."""

    def __init__(self, receiver: OtlpGrpcReceiver, exc: IntakeRejected) -> None:
        self._receiver, self._exc = receiver, exc

    def __call__(self, _unread: Iterator[bytes], context: grpc.ServicerContext) -> None:
        self._receiver.refuse(self._exc, context)


def _authorization(metadata: Sequence[tuple[str, str | bytes]] | None) -> str | None:
    """The call's first ``authorization`` metadata value (gRPC keys are lower case)."""
    for key, value in metadata or ():
        if key == "authorization":
            return value if isinstance(value, str) else value.decode("latin-1")
    return None
