"""The agent's span processor: spans queued on the request path, ended and exported by one thread.

:meth:`RagpulseSpanProcessor.end` (request path) only appends the span's side record, carrying
the span and its end time, to the bounded queue of :class:`~ragpulse.agent.batching.BatchThread`,
or counts a drop when it is full; it never blocks and never raises. The export thread ends the
span at that time (the SDK's ``end()`` freezes the span, builds a finished copy and calls the
processors: about 19,000 instructions a span that the application no longer waits for) and
exports the ended span itself: it expands its record
(:class:`~ragpulse.agent.materialize.Materializer`) into the attributes and events the span
leaves with; the agent's own exporters encode them at once (``encode_finished``, then
``export_encoded`` with the batch), any other ``SpanExporter`` gets copies of the spans carrying
them. A span ended elsewhere (feedback; one the application ended itself) reaches ``on_end`` and
is queued as it is, without a record. Anything the exporter does (network, blocking on a broker
that is down) happens on that thread only. After ``fork()`` the exporter also drops its
connections (``after_fork``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .batching import BatchThread
from .config import Settings
from .conventions import RAG_TRUNCATED
from .materialize import Materializer, copy_span
from .records import Record
from .stats import Stats

__all__ = ["RagpulseSpanProcessor"]


class RagpulseSpanProcessor(BatchThread, SpanProcessor):
    """Batching processor with counted drops and export-thread materialisation."""

    def __init__(self, exporter: SpanExporter, materializer: Materializer, settings: Settings, stats: Stats):
        self._exporter = exporter
        self._materializer = materializer
        # .active on the thread that ends queued spans (whose finished copies on_end then ignores).
        self._ending = threading.local()
        super().__init__("ragpulse-export", settings, stats)

    def _forked(self) -> None:
        after_fork = getattr(self._exporter, "after_fork", None)
        if callable(after_fork):
            try:
                after_fork()
            except Exception:  # noqa: BLE001
                self._log_once("exporter after_fork failed")

    # -- request path ------------------------------------------------------------------------
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        return None

    # The record, carrying its span and end time, goes straight into the queue: no call of its own.
    end = BatchThread.put

    def on_end(self, span: ReadableSpan) -> None:
        if not getattr(self._ending, "active", False):
            self.put(span)  # ended elsewhere: queued as it is
        # else: the SDK's finished copy of a span _process is ending; it exports the span itself

    def _rejected(self, item: Record | ReadableSpan) -> None:
        self._stats.drop("shutdown" if self._stopped else "queue_full")

    # -- export thread -----------------------------------------------------------------------
    def _process(self, batch: list[Record | ReadableSpan]) -> None:
        exporter = self._exporter
        # The agent's own exporters encode each span as soon as it is materialised (the batch then
        # holds bytes, not every span's attributes); any other SpanExporter gets copies of the spans.
        encode = getattr(exporter, "encode_finished", None)
        finish = encode if encode is not None else copy_span
        finalize = self._materializer.finalize
        out: list[Any] = []
        ending = self._ending
        ending.active = True  # on_end on this thread now only sees the spans ended below
        try:
            for item in batch:
                try:
                    if isinstance(item, Record):
                        record, span = item, item.span
                        item.span = None
                        if span.end_time is not None:
                            continue  # the application ended it meanwhile: on_end queued it then
                        span.end(end_time=record.end_time)  # at the time the call returned
                    else:
                        record, span = None, item
                    attributes, events = finalize(span, record)
                    out.append(finish(span, attributes, events))
                except Exception:  # noqa: BLE001 - never let one odd value stop the pipeline
                    self._stats.drop("internal_error")
                    self._log_once("materialising a span failed")
                    continue
                if RAG_TRUNCATED in attributes:
                    self._stats.add("truncated_spans")
        finally:
            ending.active = False
        if out:
            self._export(exporter.export_encoded if encode is not None else exporter.export, out)

    def _export(self, export: Callable[[list[Any]], Any], spans: list[Any]) -> None:
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            result = export(spans)
        except Exception:  # noqa: BLE001
            self._log_once("exporter raised")
            self._stats.drop("export_failed", len(spans))
            return
        finally:
            detach(token)
        if getattr(self._exporter, "counts_own_drops", False):
            return  # the exporter counts exported and dropped spans itself (it may partly succeed)
        if result is SpanExportResult.SUCCESS:
            self._stats.add("spans_exported", len(spans))
        else:
            self._stats.drop("export_failed", len(spans))

    # -- lifecycle ---------------------------------------------------------------------------
    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export everything queued now (in the caller's thread), then flush the exporter."""
        flush = getattr(self._exporter, "force_flush", None)
        return self._flush(timeout_millis / 1000.0, flush, "exporter force_flush raised")

    def shutdown(self) -> None:
        if not self._stop():
            return
        try:
            self._exporter.shutdown()
        except Exception:  # noqa: BLE001
            self._log_once("exporter shutdown raised")
