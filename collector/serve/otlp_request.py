"""What the OTLP intakes (HTTP and gRPC) do alike with a received traces request.

Both hand the request's bytes (inflated, within ``max_record_bytes``) to the
same decoders as the Kafka consumer, accept a request without any span as the
OpenTelemetry Collector does, refuse one whose every span was rejected (retrying
cannot help), and answer an accepted one with an ``ExportTraceServiceResponse``
whose ``partial_success`` counts the spans that were rejected. Only the way a
refusal travels differs (an HTTP status, a gRPC status code): a refusal here is
an :class:`~.intake_body.IntakeRejected` carrying the HTTP status, which the
gRPC intake maps to its code.
"""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ..ingest.otlp import DecodeResult, Limits, MalformedRecord, decode_otlp_json, decode_otlp_proto
from .empty_request import holds_no_span
from .intake_body import IntakeRejected

__all__ = ["decode_request", "export_response", "partial_message"]


def decode_request(body: bytes, is_json: bool, limits: Limits) -> DecodeResult | None:
    """The decoded request, None for a well-formed request without any span; raises a 400
    :class:`IntakeRejected` for bytes that do not decode or hold no usable span."""
    try:
        result = decode_otlp_json(body, limits) if is_json else decode_otlp_proto(body, limits)
    except MalformedRecord as exc:
        if holds_no_span(body, is_json):
            return None
        raise IntakeRejected(400, str(exc)) from None
    except (ValueError, TypeError, RecursionError, MemoryError) as exc:
        if holds_no_span(body, is_json):
            return None
        raise IntakeRejected(400, f"undecodable body: {type(exc).__name__}: {exc}"[:1000]) from None
    if not result.spans:
        # Every span was rejected: nothing was accepted, and retrying cannot help.
        raise IntakeRejected(400, f"no usable span: {'; '.join(result.errors[:5])[:1000]}")
    return result


def partial_message(result: DecodeResult | None) -> str:
    """The ``partial_success.error_message`` of an accepted request ('' when nothing was rejected)."""
    if result is None or not result.errors:
        return ""
    return "; ".join(result.errors[:5])[:1000]


def export_response(result: DecodeResult | None) -> ExportTraceServiceResponse:
    """The answer to an accepted request: empty, or a partial success naming the rejected spans."""
    resp = ExportTraceServiceResponse()
    if result is not None and result.errors:
        resp.partial_success.rejected_spans = len(result.errors)
        resp.partial_success.error_message = partial_message(result)
    return resp
