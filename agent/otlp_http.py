"""``exporter="otlp"``: the finished spans to an OTLP/HTTP endpoint, e.g. ``ragpulse collect --no-kafka``.

The OpenTelemetry SDK's own OTLP/HTTP exporter (``opentelemetry-exporter-otlp-proto-http``,
``pip install 'ragpulse[otlp]'``) sends them; this wrapper only cuts one export batch into
requests that stay under ``max_record_bytes`` (by a cheap size estimate, no second encoding),
so a batch of large retrieval spans never becomes one request a receiver refuses as too large
(``ragpulse collect`` takes 8 MiB by default), and counts what was sent and what failed.
Runs on the agent's export thread only; the exporter's retries are bounded by ``otlp_timeout_s``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .stats import Stats

__all__ = ["OtlpHttpSpanExporter", "traces_url", "estimated_size", "request_overhead"]

_TRACES_PATH = "/v1/traces"
# Protobuf framing per attribute (key, value and the KeyValue/AnyValue headers) and per span
# (ids, times, name, status): generous, so a request's real size stays below the estimate.
_PER_VALUE = 16
_PER_SPAN = 160


def traces_url(endpoint: str) -> str:
    """The traces URL of ``endpoint``: a base URL gets ``/v1/traces`` (as ``OTEL_EXPORTER_OTLP_ENDPOINT``
    does), a URL that already ends in it is used as it is."""
    url = endpoint.strip()
    return url if url.rstrip("/").endswith(_TRACES_PATH) else url.rstrip("/") + _TRACES_PATH


def _value_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value) * 2 if not value.isascii() else len(value)  # UTF-8 takes up to 4 bytes a char
    if isinstance(value, (tuple, list)):
        return sum(_value_size(v) + _PER_VALUE for v in value)
    return 10


def _attributes_size(attributes: Mapping[str, Any] | None) -> int:
    if not attributes:
        return 0
    return sum(len(k) + _value_size(v) + _PER_VALUE for k, v in attributes.items())


def estimated_size(span: ReadableSpan) -> int:
    """An upper estimate of ``span``'s encoded OTLP size in bytes."""
    size = _PER_SPAN + len(span.name) + _attributes_size(span.attributes)
    for event in span.events:
        size += _PER_SPAN // 2 + len(event.name) + _attributes_size(event.attributes)
    return size


def request_overhead(span: ReadableSpan) -> int:
    """An upper estimate of what a request holding ``span`` adds once: its resource and scope."""
    scope = span.instrumentation_scope
    names = len(scope.name) + len(scope.version or "") if scope is not None else 0
    return _PER_SPAN + names + _attributes_size(span.resource.attributes if span.resource else None)


def _requests(spans: Sequence[ReadableSpan], max_bytes: int) -> Iterator[Sequence[ReadableSpan]]:
    """``spans`` in consecutive groups whose estimated size stays under ``max_bytes`` (a span larger
    than that alone goes alone: the agent's limits keep one span far below a receiver's limit).
    Every span of the agent's provider shares one resource and scope, counted once a request."""
    if not spans:
        return
    overhead = request_overhead(spans[0])
    start, size = 0, overhead
    for i, span in enumerate(spans):
        one = estimated_size(span)
        if i > start and size + one > max_bytes:
            yield spans[start:i]
            start, size = i, overhead
        size += one
    if start < len(spans):
        yield spans[start:]


class OtlpHttpSpanExporter(SpanExporter):
    """The OTel SDK's ``OTLPSpanExporter`` behind a request-size cut and ragpulse's counters."""

    counts_own_drops = True  # the processor leaves spans_exported / export_failed to this exporter

    def __init__(
        self,
        endpoint: str,
        headers: Mapping[str, str],
        timeout_s: float,
        compression: str | None,
        max_request_bytes: int,
        stats: Stats,
    ):
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        self.url = traces_url(endpoint)
        self._stats = stats
        self._max_bytes = max_request_bytes
        options = {
            "endpoint": self.url,
            "headers": dict(headers),
            "timeout": float(timeout_s),
            "compression": Compression(compression) if compression else Compression.NoCompression,
        }
        self._make = lambda: OTLPSpanExporter(**options)
        self._inner = self._make()

    def after_fork(self) -> None:
        """A forked child gets its own HTTP session: the parent's pooled connections are not its to use."""
        self._inner = self._make()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.SUCCESS
        for group in _requests(spans, self._max_bytes):
            if self._inner.export(group) is SpanExportResult.SUCCESS:
                self._stats.add("spans_exported", len(group))
                self._stats.add("records_sent")
            else:
                self._stats.drop("export_failed", len(group))
                result = SpanExportResult.FAILURE
        return result

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # nothing is buffered here: every export() call has sent its requests

    def shutdown(self) -> None:
        self._inner.shutdown()
