"""OTel SDK ``ReadableSpan`` objects -> :class:`~.model.Span`: the embedded collector's input.

The agent's in-process sink hands over the SDK's finished spans; converting
them directly avoids an OTLP encode and decode (measured for RAG spans: 26 µs
of CPU per span directly against 193 µs through OTLP).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...agent.conventions import SERVICE_NAME
from ..core.model import Span

__all__ = ["spans_from_readable"]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value


def spans_from_readable(spans: Sequence[Any] | Iterable[Any]) -> list[Span]:
    """Convert OTel SDK ``ReadableSpan`` objects directly (the embedded path; no OTLP round trip)."""
    out: list[Span] = []
    for s in spans:
        ctx = s.context
        if ctx is None or not ctx.trace_id or not ctx.span_id:
            continue
        parent = s.parent
        res = s.resource
        service = res.attributes.get(SERVICE_NAME, "") if res is not None else ""
        attrs = {k: _plain(v) for k, v in (s.attributes or {}).items()}
        events = [
            (e.name, e.timestamp or 0, {k: _plain(v) for k, v in (e.attributes or {}).items()})
            for e in s.events
        ]
        start = s.start_time or 0
        end = s.end_time or start
        out.append(
            Span(
                format(ctx.trace_id, "032x"),
                format(ctx.span_id, "016x"),
                format(parent.span_id, "016x") if parent is not None and parent.span_id else "",
                s.name,
                start,
                end,
                int(s.status.status_code.value) if s.status is not None else 0,
                str(service),
                attrs,
                events,
            )
        )
    return out
