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
* the ``authorization`` metadata must be ``Bearer <token>`` when a token is set
  (the same setting as HTTP): UNAUTHENTICATED otherwise, nothing decoded;
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
            ],
            maximum_concurrent_rpcs=4 * workers,
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
        try:
            self.intake.admit(dict(context.invocation_metadata()).get("authorization"))
            return export_response(self.intake.accept("grpc", request, False))
        except IntakeRejected as exc:
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
