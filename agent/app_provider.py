"""Spans under the application's own tracer provider (``exporter="none"``), ended off the request path.

With its own provider the agent expands a span's side record in its export
thread, after the span ended. Under the application's provider the span's
attributes must be on it before it ends, and expanding them on the request
path (documents, metadata JSON, citations: about 40 SDK attribute writes for 10
chunks) cost more than the spans themselves. So the request path records the
end time and queues the span; the thread here expands the record, writes the
attributes and events and ends the span with the recorded end time, handing it
to the application's span processors. The provider's own ``force_flush()`` and
``shutdown()`` end everything queued first (:mod:`.flush_hook`), and so does
``agent.flush()``, which then flushes the provider; spans reach that provider's
processors within ``schedule_delay_ms`` otherwise. Under a provider whose flush and
shutdown cannot be hooked the spans are ended on the request path (the hook warns).

The provider keeps a bounded number of attributes per span
(``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT``, default 128) and drops the oldest beyond
it. The agent reads the limit from the SDK's ``SpanLimits`` and gives the
materialiser the room a span has left, so a retrieval whose flattened documents
would not fit writes them as one JSON attribute (``gen_ai.retrieval.documents``)
and its kind and first documents are never the ones dropped; it warns once
when that happens, learns the real limit from the provider's own drop count if
the application configured a lower one in code, and counts both in ``stats()``.
When the queue is full a span is ended on the request path instead (never dropped).
"""

from __future__ import annotations

import atexit
import logging
import weakref
from typing import Any

from .batching import BatchThread
from .config import Settings
from .conventions import GEN_AI_RETRIEVAL_DOCUMENTS, RAG_DOCUMENTS_COUNT, RAG_TRUNCATED, RETRIEVAL_DOCUMENTS
from .conventions import document_key as _document_key
from .materialize import Materializer
from .records import Record
from .stats import Stats

__all__ = ["AppSpanEnder"]

_log = logging.getLogger("ragpulse.agent")
_FIRST_FLAT_ID = _document_key(RETRIEVAL_DOCUMENTS, 0, "id")


def _limits() -> tuple[int | None, int | None]:
    """(max attributes per span, max attribute value length) as the SDK reads them from the environment."""
    try:
        from opentelemetry.sdk.trace import SpanLimits
    except ImportError:  # an API-only provider: nothing is known about its limits
        return None, None
    limits = SpanLimits()
    return limits.max_span_attributes, limits.max_span_attribute_length


class AppSpanEnder(BatchThread):
    """Spans to end, queued on the request path and ended by one thread (see the module docstring)."""

    def __init__(self, materializer: Materializer, settings: Settings, stats: Stats):
        self._materializer = materializer
        self._provider = settings.tracer_provider  # None: the global one, looked up again at flush time
        self.max_attributes, self.max_value_len = _limits()
        super().__init__("ragpulse-app-spans", settings, stats)
        stop = weakref.WeakMethod(self.shutdown)
        atexit.register(lambda: (method := stop()) is not None and method())
        self._deferring = False  # True once the provider's flush and shutdown end the queued spans
        self._inline: bool | None = None  # True: end spans on the request path; None: not hooked yet
        self._hook()

    def _hook(self) -> None:
        """Have the provider's flush and shutdown end the queued spans (once it is an SDK provider:
        the global one may still be the API's proxy until the application sets it); where they
        cannot, end spans on the request path from now on."""
        provider = self._provider
        if provider is None:
            from opentelemetry import trace as trace_api

            provider = trace_api.get_tracer_provider()
        try:
            from .flush_hook import hook_provider

            hooked = hook_provider(provider, self)
        except Exception:  # noqa: BLE001 - never raise into the application
            _log.exception("ragpulse: hooking into the application's provider failed; ending spans inline")
            hooked = False
        if hooked is not None:
            self._inline = not hooked
            self._deferring = hooked

    # -- request path ------------------------------------------------------------------------
    def end(self, record: Record) -> None:
        """Queue the span ``record`` carries, to be completed from it and ended at its end time."""
        if not self._deferring:
            self._end_unhooked(record)
            return
        self.put(record)

    def _end_unhooked(self, record: Record) -> None:
        """Before the provider is hooked, try again (and queue while it is no SDK provider);
        under a provider that could not be hooked, end the span here."""
        if self._inline is None:
            self._hook()
        if self._inline:
            self._finish(record)
        else:
            self.put(record)

    def _rejected(self, item: Record) -> None:
        self._finish(item)  # the queue is full: end it here, never drop it

    # -- the thread --------------------------------------------------------------------------
    def _process(self, batch: list[Record]) -> None:
        for record in batch:
            self._finish(record)

    def _finish(self, record: Record) -> None:
        """Write the record's attributes and events on the span it carries and end that span at
        the record's end time; never raises."""
        span, record.span = record.span, None
        end_time = record.end_time
        try:
            existing = len(span.attributes) if hasattr(span, "attributes") else 0
            room = None if self.max_attributes is None else self.max_attributes - existing
            own = getattr(span, "attributes", None)
            attrs, events = self._materializer.expand(record, None, end_time, room, self.max_value_len, own)
            before = getattr(span, "dropped_attributes", 0)
            span.set_attributes(attrs)
            for event in events:
                span.add_event(event.name, event.attributes, event.timestamp)
            self._count(span, attrs, before)
        except Exception:  # noqa: BLE001 - a ragpulse bug must not keep the application's span open
            self._stats.add("internal_errors")
            _log.exception("ragpulse: completing a span under the application's provider failed")
        try:
            span.end(end_time=end_time)
            self._stats.add("spans_exported")
        except Exception:  # noqa: BLE001
            self._stats.add("internal_errors")

    def _count(self, span: Any, attrs: dict[str, Any], before: int) -> None:
        """Count truncations, documents written as one JSON value, and attributes the provider dropped."""
        stats = self._stats
        if attrs.get(RAG_TRUNCATED):
            stats.add("truncated_spans")
        if (
            GEN_AI_RETRIEVAL_DOCUMENTS in attrs
            and _FIRST_FLAT_ID not in attrs
            and attrs.get(RAG_DOCUMENTS_COUNT)
        ):
            stats.add("compacted_spans")
            self._warn_once(
                "compacted",
                "ragpulse: the application's tracer provider keeps %s attributes per span and a retrieval "
                "of %s documents needs more: its documents are written as one JSON attribute (%s), as they "
                "will be for every such span (stats()['compacted_spans']). Raise "
                "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT to keep the flattened OpenInference form.",
                self.max_attributes,
                attrs[RAG_DOCUMENTS_COUNT],
                GEN_AI_RETRIEVAL_DOCUMENTS,
            )
        dropped = getattr(span, "dropped_attributes", 0) - before
        if dropped > 0:
            stats.add("attributes_dropped", dropped)
            # The provider keeps fewer than SpanLimits() said (limits set in code): it is full now.
            self.max_attributes = len(span.attributes)
            self._warn_once(
                "dropped",
                "ragpulse: the application's tracer provider dropped %s attributes of span %r (it keeps "
                "%s); from now on ragpulse fits its spans into that limit (stats()['attributes_dropped']).",
                dropped,
                getattr(span, "name", ""),
                self.max_attributes,
            )

    def _warn_once(self, kind: str, message: str, *args: Any) -> None:
        if self._first(kind):
            _log.warning(message, *args)

    # -- lifecycle ---------------------------------------------------------------------------
    def flush(self, timeout_s: float) -> bool:
        """End everything queued now (in the caller's thread), then flush the application's provider."""
        provider = self._provider
        if provider is None:  # the global provider, which the application may have set after configure()
            from opentelemetry import trace as trace_api

            provider = trace_api.get_tracer_provider()
        flush = getattr(provider, "force_flush", None)
        return self._flush(timeout_s, flush, "the application's provider force_flush raised")

    def end_queued(self) -> None:
        """End, in the caller's thread, every span queued so far, after any batch the thread is
        ending now (the provider's flush hook calls this before the provider flushes)."""
        self._drain(limit=len(self._queue))

    def shutdown(self) -> None:
        """End everything queued and stop the thread (the application's provider stays up)."""
        if self._stop():
            self._drain()
