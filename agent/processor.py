"""The agent's span processor: a bounded queue and one export thread per process.

``on_end`` (request path) only appends the finished span to a bounded deque,
or counts a drop when it is full; it never blocks and never raises. The export
thread wakes when a batch is ready or every ``schedule_delay_ms``, expands each
span's side record (:class:`~ragpulse.agent.materialize.Materializer`) and
hands the final spans to the exporter. Anything the exporter does (network,
blocking on a broker that is down) happens on that thread only.

Fork-safe: after ``fork()`` the child gets a fresh queue, lock and thread and
the exporter drops its connections (``after_fork``), so gunicorn ``--preload``
workers export on their own.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
import weakref
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .conventions import RAG_TRUNCATED
from .materialize import Materializer
from .stats import Stats

__all__ = ["RagpulseSpanProcessor"]

_log = logging.getLogger("ragpulse.agent")


class RagpulseSpanProcessor(SpanProcessor):
    """Batching processor with counted drops and export-thread materialisation."""

    def __init__(
        self,
        exporter: SpanExporter,
        materializer: Materializer,
        stats: Stats,
        max_queue_spans: int = 8192,
        export_batch_spans: int = 512,
        schedule_delay_ms: int = 200,
    ):
        self._exporter = exporter
        self._materializer = materializer
        self._stats = stats
        self._max = max_queue_spans
        self._batch = export_batch_spans
        self._delay = schedule_delay_ms / 1000.0
        self._shutdown = False
        self._logged: set[str] = set()
        # span_id -> side record, filled on the request path, consumed by the export thread.
        self.records: dict[int, Any] = {}
        self._init_thread_state()
        if hasattr(os, "register_at_fork"):
            ref = weakref.WeakMethod(self._after_fork_in_child)

            def _child() -> None:
                method = ref()
                if method is not None:
                    method()

            os.register_at_fork(after_in_child=_child)

    def _init_thread_state(self) -> None:
        self._queue: collections.deque[ReadableSpan] = collections.deque()
        self._wake = threading.Event()
        self._export_lock = threading.Lock()
        self._thread = threading.Thread(target=self._worker, name="ragpulse-export", daemon=True)
        self._thread.start()

    def _after_fork_in_child(self) -> None:
        """In a forked child: the parent's thread is gone; start afresh with an empty queue."""
        if self._shutdown:
            return
        after_fork = getattr(self._exporter, "after_fork", None)
        if callable(after_fork):
            try:
                after_fork()
            except Exception:  # noqa: BLE001
                _log.exception("ragpulse exporter after_fork failed")
        self.records.clear()
        self._init_thread_state()

    # -- request path ------------------------------------------------------------------------
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        queue = self._queue
        if len(queue) >= self._max or self._shutdown:
            self.records.pop(span.context.span_id, None)
            self._stats.drop("shutdown" if self._shutdown else "queue_full")
            return
        queue.append(span)
        if len(queue) >= self._batch:
            self._wake.set()

    # -- export thread -----------------------------------------------------------------------
    def _worker(self) -> None:
        while not self._shutdown:
            self._wake.wait(self._delay)
            self._wake.clear()
            try:
                self._drain()
            except Exception:  # noqa: BLE001 - the export thread must outlive any bug
                self._stats.add("internal_errors")
                self._log_once("the export loop failed")
        try:
            self._drain()
        except Exception:  # noqa: BLE001
            self._log_once("the final export failed")

    def _log_once(self, kind: str) -> None:
        if kind not in self._logged:
            self._logged.add(kind)
            _log.exception("ragpulse: %s (further errors of this kind are only counted)", kind)

    def _drain(self, limit: int | None = None) -> None:
        """Export queued spans in batches; at most ``limit`` of them (None: until the queue is empty)."""
        with self._export_lock:
            queue = self._queue
            left = len(queue) if limit is None else min(limit, len(queue))
            while left > 0 and queue:
                batch: list[ReadableSpan] = []
                try:
                    while queue and len(batch) < self._batch and len(batch) < left:
                        batch.append(queue.popleft())
                except IndexError:
                    pass
                left -= len(batch)
                self._export(batch)

    def _export(self, batch: list[ReadableSpan]) -> None:
        final: list[ReadableSpan] = []
        records = self.records
        for span in batch:
            try:
                out = self._materializer.finalize(span, records.pop(span.context.span_id, None))
                final.append(out)
                if RAG_TRUNCATED in out.attributes:
                    self._stats.add("truncated_spans")
            except Exception:  # noqa: BLE001 - never let one odd value stop the pipeline
                self._stats.drop("internal_error")
                self._log_once("materialising a span failed")
        if not final:
            return
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            result = self._exporter.export(final)
        except Exception:  # noqa: BLE001
            self._log_once("exporter raised")
            self._stats.drop("export_failed", len(final))
            return
        finally:
            detach(token)
        if getattr(self._exporter, "counts_own_drops", False):
            return  # the exporter counts exported and dropped spans itself (it may partly succeed)
        if result is SpanExportResult.SUCCESS:
            self._stats.add("spans_exported", len(final))
        else:
            self._stats.drop("export_failed", len(final))

    # -- lifecycle ---------------------------------------------------------------------------
    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export everything queued now (in the caller's thread), then flush the exporter."""
        deadline = time.monotonic() + timeout_millis / 1000.0
        self._drain(limit=len(self._queue))  # what was queued at the call: other threads may keep adding
        flush = getattr(self._exporter, "force_flush", None)
        if callable(flush):
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            try:
                return bool(flush(remaining))
            except Exception:  # noqa: BLE001
                self._log_once("exporter force_flush raised")
                return False
        return True

    def shutdown(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        self._wake.set()
        self._thread.join(timeout=10)
        try:
            self._exporter.shutdown()
        except Exception:  # noqa: BLE001
            self._log_once("exporter shutdown raised")
