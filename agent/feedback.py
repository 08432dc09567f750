"""User feedback on a RAG call that already finished: ``feedback(trace_id, ...)``.

A web application gets the thumbs-down minutes after the answer, often in
another request or process; the trace id (``RagHandle.trace_id``,
:func:`current_trace_id`) is all it has to keep. :func:`feedback` writes one
``rag.feedback`` span into that trace (DESIGN.md "Span conventions") through
the configured exporter, so it travels on the same Kafka topic with the same
key and lands on the trace's partition. The collector stores it in
``rag_feedback`` and never counts it as a late span.

Nothing here raises into the application or blocks it: invalid arguments are
logged once per kind, dropped and counted in ``stats()["feedback_invalid"]``;
the span itself goes through the export thread, where the comment is limited
and redacted like every other attribute.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping
from typing import Any

from .conventions import (
    FEEDBACK_COMMENT,
    FEEDBACK_KIND,
    FEEDBACK_LABEL,
    FEEDBACK_SOURCE,
    FEEDBACK_SPAN,
    FEEDBACK_VALUE,
)
from .once import Once
from .runtime import STATE, get_runtime

__all__ = [
    "FEEDBACK_SPAN",
    "FEEDBACK_KIND",
    "FEEDBACK_VALUE",
    "FEEDBACK_LABEL",
    "FEEDBACK_COMMENT",
    "FEEDBACK_SOURCE",
    "feedback",
    "feedback_attributes",
    "parse_trace_ref",
]

_log = logging.getLogger("ragpulse.agent")

_MAX_NAME = 64
_first = Once()


def _invalid(reason: str) -> None:
    STATE.stats.add("feedback_invalid")
    if _first(reason):
        _log.warning("ragpulse: feedback dropped: %s (further drops of this kind are only counted)", reason)


def parse_trace_ref(ref: Any) -> tuple[int, int | None]:
    """(trace id, root span id or None) from a 32-hex trace id, an int, or a W3C ``traceparent``.

    Raises ValueError for anything else (the caller counts and drops it).
    """
    if isinstance(ref, bool):
        raise ValueError("trace id must be a 32-hex string, not a bool")
    if isinstance(ref, int):
        if not 0 < ref < 1 << 128:
            raise ValueError("trace id out of range")
        return ref, None
    if not isinstance(ref, str):
        raise ValueError(f"trace id must be a string, got {type(ref).__name__}")
    text = ref.strip().lower()
    parts = text.split("-")
    span: int | None = None
    if len(parts) == 4 and len(parts[1]) == 32 and len(parts[2]) == 16:  # traceparent
        text, span = parts[1], int(parts[2], 16) if _is_hex(parts[2]) else 0
        if not span:
            raise ValueError("traceparent with an invalid parent id")
    if len(text) != 32 or not _is_hex(text) or int(text, 16) == 0:
        raise ValueError("trace id must be 32 hex digits")
    return int(text, 16), span


def _is_hex(text: str) -> bool:
    return bool(text) and all(c in "0123456789abcdef" for c in text)


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_NAME:
        raise ValueError(f"{what} must be a non-empty string of at most {_MAX_NAME} characters")
    return value.strip()


def feedback_attributes(
    value: Any = None,
    *,
    label: Any = None,
    kind: Any = "thumbs",
    comment: Any = None,
    source: Any = "user",
    attributes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``rag.feedback.*`` attributes for these arguments; raises ValueError when invalid.

    ``value`` is a number in [-1, 1] (thumbs: -1 / 1; a 1-5 rating maps to it as
    the application likes); ``label`` defaults from its sign. At least one of the two.
    """
    attrs: dict[str, Any] = {FEEDBACK_KIND: _name(kind, "kind"), FEEDBACK_SOURCE: _name(source, "source")}
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"value must be a number in [-1, 1], got {type(value).__name__}")
        if math.isnan(value) or not -1.0 <= value <= 1.0:
            raise ValueError(f"value must be within [-1, 1], got {value!r}")
        attrs[FEEDBACK_VALUE] = float(value)
    if label is None and value is not None:
        label = "positive" if value > 0 else "negative" if value < 0 else "neutral"
    if label is None:
        raise ValueError("feedback needs a value or a label")
    attrs[FEEDBACK_LABEL] = _name(label, "label")
    if comment is not None:
        if not isinstance(comment, str):
            raise ValueError("comment must be a string")
        attrs[FEEDBACK_COMMENT] = comment
    for key, extra in (attributes or {}).items():
        if not isinstance(key, str) or not key or key.startswith("rag.feedback."):
            raise ValueError(f"attribute key {key!r} is empty, not a string or reserved")
        attrs[key] = extra if isinstance(extra, (str, bool, int, float)) else str(extra)
    return attrs


def feedback(
    trace_id: Any,
    value: float | None = None,
    *,
    label: str | None = None,
    kind: str = "thumbs",
    comment: str | None = None,
    source: str = "user",
    attributes: Mapping[str, Any] | None = None,
    span_id: Any = None,
) -> bool:
    """Record feedback on the RAG call ``trace_id``; True when it was queued for export.

    ``trace_id``: the call's 32-hex trace id (``RagHandle.trace_id``), or a
    W3C ``traceparent`` (which also names the root span). ``span_id`` (16 hex
    or int), when known, makes the feedback span a child of the call's root
    span; ``RagHandle.feedback`` passes it. Never raises, never blocks.
    """
    try:
        tid, parent = parse_trace_ref(trace_id)
        if span_id is not None:
            parent = int(span_id, 16) if isinstance(span_id, str) else int(span_id)
        attrs = feedback_attributes(
            value, label=label, kind=kind, comment=comment, source=source, attributes=attributes
        )
    except (TypeError, ValueError) as exc:
        _invalid(str(exc))
        return False
    try:
        return _emit(tid, parent, attrs)
    except Exception:  # noqa: BLE001 - feedback must never break the application
        STATE.stats.add("internal_errors")
        _log.exception("ragpulse: emitting feedback failed (the application is unaffected)")
        return False


def _emit(trace_id: int, parent_span: int | None, attrs: dict[str, Any]) -> bool:
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    rt = STATE.rt or get_runtime()
    if rt is None or not rt.enabled:
        return False
    own_span = int.from_bytes(os.urandom(8), "big") or 1
    flags = TraceFlags(TraceFlags.SAMPLED)
    if rt.processor is None:
        # exporter="none": the application's provider exports; it needs a parent context to put the
        # span into the call's trace, so an unknown root is stood in for by a remote placeholder.
        parent_ctx = SpanContext(trace_id, parent_span or own_span, is_remote=True, trace_flags=flags)
        span = rt.tracer.start_span(
            FEEDBACK_SPAN, context=set_span_in_context(NonRecordingSpan(parent_ctx)), attributes=attrs
        )
        span.end()
        STATE.stats.add("feedback_sent")
        return True
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanKind

    now = time.time_ns()
    span = ReadableSpan(
        name=FEEDBACK_SPAN,
        context=SpanContext(trace_id, own_span, is_remote=False, trace_flags=flags),
        parent=SpanContext(trace_id, parent_span, is_remote=True, trace_flags=flags) if parent_span else None,
        resource=rt.provider.resource,
        attributes=attrs,
        kind=SpanKind.INTERNAL,
        start_time=now,
        end_time=now,
        instrumentation_scope=InstrumentationScope("ragpulse.agent"),
    )
    rt.processor.on_end(span)  # queued for the export thread, which limits and redacts it
    STATE.stats.add("feedback_sent")
    return True
