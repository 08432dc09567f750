"""The life of one traced call's span on the request path: open, make current, end.

:func:`open_call` starts a span as a child of the current context and returns
a :class:`Call`; ``with call:`` makes the span (and the RAG call it belongs to)
current for one step of the application's code: the whole call of a function
or coroutine, one ``send``/``throw`` of a stream. A step that raises ends the
span with the error; a stream's own end (``StopIteration``) ends it cleanly.
Every callable kind and the with-statement forms share this one lifecycle.

The context holds the span (through ``opentelemetry.trace``'s public
functions) and the current RAG call's record, under a ragpulse key, so
``cite()`` and nested retrieval/generation spans find it without arguments.
"""

from __future__ import annotations

import logging
import random
from time import time_ns
from typing import Any, Protocol

from opentelemetry.context import Context, attach, create_key, detach, get_current, set_value
from opentelemetry.trace import set_span_in_context
from opentelemetry.trace.status import Status, StatusCode

from .conventions import EXCEPTION_MESSAGE
from .once import Once
from .records import Record
from .runtime import STATE, Runtime, get_runtime

__all__ = ["RAG_KEY", "BLOCK_KEY", "Call", "SpanSpec", "UNTRACED", "emit", "internal_error", "open_call"]

_log = logging.getLogger("ragpulse.agent")

# Context key holding the current RAG call's record (or _UNSAMPLED when head sampling said no).
RAG_KEY = create_key("ragpulse-rag")
_UNSAMPLED = object()
# Context key of the innermost with-statement block.
BLOCK_KEY = create_key("ragpulse-block")
_first = Once()


def internal_error(where: str) -> None:
    """Count (and log once per place) an error inside ragpulse; the application goes on."""
    STATE.stats.add("internal_errors")
    if _first(where):
        _log.exception("ragpulse internal error in %s (the application is unaffected)", where)


class SpanSpec(Protocol):
    """What :func:`open_call` needs to know about the kind of span it opens."""

    name: str
    root: bool

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record: ...


class Call:
    """A live span on the request path; ``with call:`` runs one step of the call inside it."""

    __slots__ = ("span", "record", "ctx", "rt", "token", "parts", "limit", "end_type", "ending")

    def __init__(self, span: Any, record: Record | None, ctx: Context, rt: Runtime | None):
        self.span = span
        self.record = record
        self.ctx = ctx
        self.rt = rt
        self.token: Any = None
        self.parts: list[Any] | None = None
        self.limit = 0
        self.end_type: type[BaseException] | None = None  # a stream's normal end
        self.ending = False  # the consumer closed the stream: end the span whatever happens

    def __enter__(self) -> None:
        self.token = attach(self.ctx)

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        detach(self.token)
        if self.ending:
            self.close(None)
        elif exc is not None:
            self.close(None if exc_type is self.end_type else exc)
        return False

    def finish(self, result: Any) -> Any:
        """Keep ``result`` on the record and end the span; returns ``result``."""
        if self.record is not None:
            self.record.set_result(result)
        self.close(None)
        return result

    def start_stream(self, end_type: type[BaseException]) -> None:
        """Collect a stream's items (up to the configured limit) for the record."""
        self.end_type = end_type
        self.parts = []
        if self.record is not None:
            self.record.parts = self.parts
            self.limit = self.rt.settings.limits.max_stream_parts

    def keep(self, item: Any) -> Any:
        """Keep a streamed item for the record; returns it."""
        if len(self.parts) < self.limit:
            self.parts.append(item)
        return item

    def closing(self) -> Call:
        """The consumer closed the stream early: ``with call.closing():`` runs the close, then ends the span."""
        if self.record is not None:
            self.record.stream_closed = True
        self.ending = True
        return self

    def leave(self, exc: BaseException | None) -> None:
        """Leave a with-statement block: restore the outer context and end the span."""
        detach(self.token)
        self.close(exc)

    def close(self, exc: BaseException | None) -> None:
        """End the span, recording ``exc``; never raises."""
        span = self.span
        if span is None:
            return
        try:
            rt = self.rt
            if exc is not None:
                redactor = rt.materializer.redactor
                extra = (
                    {EXCEPTION_MESSAGE: redactor(str(exc))} if redactor is not None and not rt.own else None
                )
                span.record_exception(exc, attributes=extra)
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            record = self.record
            if rt.ender is not None and record is not None and span.is_recording():
                record.span = span
                record.end_time = time_ns()
                rt.ender.end(record)  # completed and ended off the request path, at this time
                return
            span.end()
        except Exception:  # noqa: BLE001
            internal_error("span end")


class _Untraced:
    """Stands in for a :class:`Call` where a stream is not traced: every step passes straight through."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        return False

    def start_stream(self, end_type: type[BaseException]) -> None:
        return None

    def keep(self, item: Any) -> Any:
        return item

    def closing(self) -> _Untraced:
        return self


UNTRACED = _Untraced()


def open_call(spec: SpanSpec, args: tuple, kwargs: dict, record: Record | None = None) -> Call | None:
    """Start ``spec``'s span as a child of the current context; None when not traced."""
    rt = STATE.rt or get_runtime()
    if rt is None or not rt.enabled:
        return None
    try:
        parent = get_current()
        root = parent.get(RAG_KEY)
        if root is _UNSAMPLED:
            return None
        ctx = parent
        if spec.root:
            if rt.sample_rate < 1.0 and random.random() >= rt.sample_rate:
                # No span, but the context says so: the call's children stay untraced too.
                return Call(None, None, set_value(RAG_KEY, _UNSAMPLED, parent), rt)
            if record is None:
                record = spec.make_record(args, kwargs, None)
            ctx = set_value(RAG_KEY, record, parent)
        elif record is None:
            record = spec.make_record(args, kwargs, root)
        span = rt.tracer.start_span(spec.name, context=parent)
        return Call(span, record, set_span_in_context(span, ctx), rt)
    except Exception:  # noqa: BLE001
        internal_error("span start")
        return None


class _Made:
    """The spec of a child span whose record is already made."""

    __slots__ = ("name",)
    root = False

    def __init__(self, name: str):
        self.name = name

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record:
        raise AssertionError("the record is made by the caller")


def emit(name: str, record: Record) -> None:
    """Open and at once end a child span for ``record`` (work that already happened)."""
    call = open_call(_Made(name), (), {}, record)
    if call is not None:
        call.close(None)
