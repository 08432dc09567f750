"""OTLP encoding of finished spans into Kafka record values, one trace per record.

A record value is an OTLP ``TracesData`` protobuf, byte-identical to an
``ExportTraceServiceRequest`` (DESIGN.md "Kafka"), keyed by the 32-hex trace
id so that every span of a trace lands in the same partition. Values always
stay under ``max_bytes``: a trace's spans are split over several records when
needed, and a single span that is still too large has its long string
attributes shortened (flagged ``rag.truncated``) or, failing that, is dropped
and counted by the caller.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import format_trace_id

from .conventions import (
    RAG_TRUNCATED,
    RAG_TRUNCATED_FIELDS,
)
from .materialize import copy_span
from .otlp_wire import EncodedSpan, traces_data

__all__ = ["EncodedRecord", "Finished", "encoded", "encode_records", "encode_traces_data", "records_of"]

_FAST_FAILS = (TypeError, ValueError, AttributeError, OverflowError)
# A span as it leaves the process: the finished span, and the attributes and events it is exported
# with (the export thread's materialised ones), so that no copy of the span is made to be encoded.
Finished = tuple[ReadableSpan, Mapping[str, Any], Sequence[Event]]


class EncodedRecord(NamedTuple):
    """One Kafka record: key (trace id hex), value (TracesData bytes) and how many spans it holds."""

    key: str
    value: bytes
    span_count: int


def encoded(item: Finished, keep_over: int = 0) -> EncodedSpan:
    """``item`` encoded by the direct wire writer, or, for a value it does not handle, by the OTel
    reference encoder (same message either way). The item is kept with it (to be shrunk if it
    cannot fit a record alone) when its encoding is longer than ``keep_over`` bytes."""
    try:
        span = EncodedSpan.of(*item)
    except _FAST_FAILS:
        copy = copy_span(*item)
        resource_spans = encode_spans([copy]).resource_spans[0]
        data = resource_spans.scope_spans[0].spans[0].SerializeToString()
        span = EncodedSpan(copy.context.trace_id, copy.resource, copy.instrumentation_scope or None, data)
    if len(span.data) > keep_over:
        span.source = item
    return span


def _own(span: ReadableSpan) -> Finished:
    return span, span.attributes, span.events


def encode_traces_data(spans: Sequence[ReadableSpan]) -> bytes:
    """Serialise spans as OTLP TracesData (grouped by resource and scope)."""
    return traces_data([encoded(_own(span)) for span in spans])


def _shrink(span: ReadableSpan, max_chars: int) -> ReadableSpan:
    """A copy of ``span`` whose string attributes are at most ``max_chars`` long."""
    attrs = dict(span.attributes or {})
    cut = False
    for key, value in attrs.items():
        if isinstance(value, str) and len(value) > max_chars:
            attrs[key] = value[:max_chars]
            cut = True
    events = []
    for event in span.events:
        ev_attrs = dict(event.attributes or {})
        for key, value in ev_attrs.items():
            if isinstance(value, str) and len(value) > max_chars:
                ev_attrs[key] = value[:max_chars]
                cut = True
        events.append(Event(event.name, ev_attrs, event.timestamp))
    if cut:
        attrs[RAG_TRUNCATED] = True
        fields = tuple(attrs.get(RAG_TRUNCATED_FIELDS) or ())
        if "record_size" not in fields:
            attrs[RAG_TRUNCATED_FIELDS] = (*fields, "record_size")
    return copy_span(span, attrs, events)


def _fit_one(span: ReadableSpan, max_bytes: int) -> bytes | None:
    max_chars = 8192
    value = b""
    while max_chars >= 64:
        value = encode_traces_data([_shrink(span, max_chars)])
        if len(value) <= max_bytes:
            return value
        max_chars //= 4
    return None


def _split(
    key: str, spans: list[EncodedSpan], max_bytes: int, dropped: list[EncodedSpan]
) -> Iterator[EncodedRecord]:
    value = traces_data(spans)
    if len(value) <= max_bytes:
        yield EncodedRecord(key, value, len(spans))
        return
    if len(spans) == 1:
        source = spans[0].source
        fitted = _fit_one(copy_span(*source), max_bytes) if source is not None else None
        if fitted is None:
            dropped.append(spans[0])
        else:
            yield EncodedRecord(key, fitted, 1)
        return
    half = len(spans) // 2
    yield from _split(key, spans[:half], max_bytes, dropped)
    yield from _split(key, spans[half:], max_bytes, dropped)


def records_of(
    spans: Sequence[EncodedSpan], max_bytes: int, dropped: list[EncodedSpan] | None = None
) -> list[EncodedRecord]:
    """Group encoded spans by trace into one (or, if too big, several) records each.

    A trace too big for one record is split by regrouping its encoded spans; a span too big
    alone is shrunk from its source. Spans that cannot fit even so are appended to ``dropped``.
    """
    by_trace: dict[int, list[EncodedSpan]] = {}
    for span in spans:
        group = by_trace.get(span.trace_id)
        if group is None:
            by_trace[span.trace_id] = [span]
        else:
            group.append(span)
    sink = dropped if dropped is not None else []
    out: list[EncodedRecord] = []
    for trace_id, group in by_trace.items():
        out.extend(_split(format_trace_id(trace_id), group, max_bytes, sink))
    return out


def encode_records(
    spans: Sequence[ReadableSpan], max_bytes: int, dropped: list[EncodedSpan] | None = None
) -> list[EncodedRecord]:
    """:func:`records_of` the spans encoded with their own attributes and events."""
    return records_of([encoded(_own(span)) for span in spans], max_bytes, dropped)
