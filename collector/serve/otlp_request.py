"""What the OTLP intakes (HTTP and gRPC) do alike with a received traces request.

Both are given one :class:`OtlpIntake`: where accepted requests go, the decoding limits,
the metrics, the bearer token and the refusal check. Both admit a request the same way
(:meth:`OtlpIntake.admit`: the bearer token when one is set, then ``refusing()``, e.g.
storage down: retry later), hand its bytes (inflated, within ``max_record_bytes``) to the
same decoders as the Kafka consumer, accept a request without any span as the
OpenTelemetry Collector does, refuse one whose every span was rejected (retrying
cannot help), hand the rest on (:meth:`OtlpIntake.accept`: decoded spans to ``submit``,
or the bytes to ``raw_submit``; either refusing is a retry later) and answer an accepted
one with an ``ExportTraceServiceResponse`` whose ``partial_success`` counts the spans that
were rejected. Only the way a refusal travels differs (an HTTP status, a gRPC status code):
a refusal here is an :class:`~.intake_body.IntakeRejected` carrying the HTTP status and the
result it is counted under, which the gRPC intake maps to its code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ..core.bearer import authorized
from ..ingest.otlp import DecodeResult, Limits, MalformedRecord, decode_otlp_json, decode_otlp_proto
from .empty_request import holds_no_span
from .inflight import RETRY_AFTER_S
from .intake_body import IntakeRejected

if TYPE_CHECKING:
    from ..core.metrics import Metrics
    from ..core.model import Span

__all__ = ["OtlpIntake", "decode_request", "export_response", "partial_message"]


def _never_refusing() -> str | None:
    return None


@dataclass(frozen=True)
class OtlpIntake:
    """Where both OTLP intakes hand what they accept, and what they check alike.

    ``submit(spans) -> bool`` gets an accepted request's decoded spans (the embedded
    pipeline's queue; False: full); ``raw_submit(body, kind) -> bool`` (kind ``proto`` or
    ``json``), when given, gets its validated bytes instead (the Kafka service forwards them
    to the spans topic; False: not forwarded). ``limits`` bound decoding; ``metrics`` count
    each answer by protocol and result; ``auth_token``, when set, is required as
    ``Authorization: Bearer <token>``; ``refusing()`` says why new requests must wait now
    (e.g. storage down), None when they need not.
    """

    submit: Callable[[list[Span]], bool]
    limits: Limits
    metrics: Metrics
    raw_submit: Callable[[bytes, str], bool] | None = None
    auth_token: str = ""
    refusing: Callable[[], str | None] = _never_refusing

    def admit(self, authorization: str | None, unread: int = 0) -> None:
        """Raise the refusal of a request before its body is read: 401 without the bearer
        token, 503 (retry later, counted ``unavailable``) while ``refusing()`` says why.
        ``unread`` is the body still on the wire (HTTP drains it and closes)."""
        if not authorized(authorization, self.auth_token):
            raise IntakeRejected(401, "missing or wrong bearer token", True, unread)
        busy = self.refusing()
        if busy:
            raise IntakeRejected(503, busy, True, unread, retry_after=RETRY_AFTER_S, result="unavailable")

    def accept(self, protocol: str, body: bytes, is_json: bool) -> DecodeResult | None:
        """Decode a request's bytes and hand it on, counted under ``protocol`` (``ok`` or
        ``empty``): the decoded request, None for one without any span. Raises a 400
        :class:`IntakeRejected` for bytes that do not decode (:func:`decode_request`) and a
        503 to retry later when it could not be handed on (``raw_submit``: unavailable;
        ``submit``, the queue full: throttled)."""
        result = decode_request(body, is_json, self.limits)
        if result is None:
            self.metrics.intake_result(protocol, "empty")
            return None
        if self.raw_submit is not None:
            if not self.raw_submit(body, "json" if is_json else "proto"):
                raise IntakeRejected(
                    503, "could not forward to Kafka", retry_after=RETRY_AFTER_S, result="unavailable"
                )
        elif not self.submit(result.spans):
            raise IntakeRejected(503, "pipeline queue full", retry_after=RETRY_AFTER_S)
        self.metrics.intake_result(protocol, "ok", len(result.spans))
        return result


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
