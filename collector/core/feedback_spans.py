"""Recognising ``rag.feedback`` spans and turning them into ``rag_feedback`` rows.

The keys are the agent's (``ragpulse.agent.feedback``): one definition for
both sides of the wire.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ...agent import conventions as sc
from .model import Span

__all__ = [
    "FEEDBACK_COLUMNS",
    "FEEDBACK_REASON",
    "NEGATIVE_LABELS",
    "is_feedback_span",
    "may_hold_feedback",
    "feedback_row",
    "is_negative",
]

FEEDBACK_COLUMNS = (
    "trace_id", "feedback_id", "time", "service", "kind", "value", "label", "comment", "source", "attributes",
)  # fmt: skip
# The sampling reason of a trace queued for judging because of negative feedback.
FEEDBACK_REASON = "rule:feedback"
#: Labels that make a feedback negative when it carries no value (compared in lower case); the
#: monitoring mixin's negative-feedback alert counts ``ragpulse_feedback_total`` by the same list.
NEGATIVE_LABELS = ("negative", "thumbs_down", "bad", "wrong", "incorrect", "escalated")
_MARKER = sc.FEEDBACK_SPAN.encode()


def is_feedback_span(span: Span) -> bool:
    """True for a span that carries feedback (by name, or by its kind attribute from other writers)."""
    return span.name == sc.FEEDBACK_SPAN or sc.FEEDBACK_KIND in span.attrs


def may_hold_feedback(record: bytes) -> bool:
    """False when an encoded span record cannot hold a feedback span (its bytes lack the name).

    The Kafka collector's native fast path builds complete traces straight from a
    record and would fold a feedback span into its trace; records that may hold
    one take the general path, where the assembler sets feedback aside.
    """
    return _MARKER in record


def _value(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    value = float(raw)
    return value if not math.isnan(value) and -1.0 <= value <= 1.0 else None


def feedback_row(span: Span) -> dict[str, Any]:
    """The ``rag_feedback`` row of a feedback span (time in integer nanoseconds)."""
    a = span.attrs
    extra = {k: v for k, v in a.items() if not k.startswith("rag.feedback.")}
    value = _value(a.get(sc.FEEDBACK_VALUE))
    label = str(a.get(sc.FEEDBACK_LABEL) or "")
    if not label and value is not None:
        label = "positive" if value > 0 else "negative" if value < 0 else "neutral"
    return {
        "trace_id": span.trace_id,
        "feedback_id": span.span_id,
        "time": span.end or span.start,
        "service": span.service,
        "kind": str(a.get(sc.FEEDBACK_KIND) or "unknown"),
        "value": value,
        "label": label,
        "comment": str(a.get(sc.FEEDBACK_COMMENT) or ""),
        "source": str(a.get(sc.FEEDBACK_SOURCE) or "user"),
        "attributes": json.dumps(extra, sort_keys=True, default=str),
    }


def is_negative(row: dict[str, Any]) -> bool:
    """Negative feedback: a negative value, or a negative label when there is no value."""
    value = row.get("value")
    if value is not None:
        return value < 0
    return str(row.get("label", "")).lower() in NEGATIVE_LABELS
