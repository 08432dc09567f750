"""A bounded queue on the request path and one thread per process that drains it in batches.

What the agent's two ways of handing spans on share: its own provider's span processor
(:class:`~ragpulse.agent.processor.RagpulseSpanProcessor`, which exports them) and, under the
application's provider, :class:`~ragpulse.agent.app_provider.AppSpanEnder` (which ends them).
:meth:`BatchThread.put` (request path) only appends to a deque, or hands the item to
``_rejected`` when the queue is full or stopped; it never blocks. The thread wakes when a batch
is ready or every ``schedule_delay_ms`` and passes the queued items, a batch at a time, to
``_process``; a failure there is counted and logged once, and the thread goes on.

Fork-safe: after ``fork()`` the child gets a fresh queue, lock and thread (the parent's thread
does not exist there, and what it had queued is the parent's), so gunicorn ``--preload``
workers hand their spans on by themselves.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from .config import Settings
from .once import Once
from .stats import Stats

__all__ = ["BatchThread"]

_log = logging.getLogger("ragpulse.agent")


class BatchThread:
    """The queue, the thread and their lifecycle; subclasses say what a batch and a rejection do."""

    def __init__(self, name: str, settings: Settings, stats: Stats):
        self._stats = stats
        self._name = name
        self._max = settings.max_queue_spans
        self._batch = settings.export_batch_spans
        self._delay = settings.schedule_delay_ms / 1000.0
        self._stopped = False
        self._first = Once()
        self._start_thread()
        if hasattr(os, "register_at_fork"):
            ref = weakref.WeakMethod(self._after_fork_in_child)

            def _child() -> None:
                method = ref()
                if method is not None:
                    method()

            os.register_at_fork(after_in_child=_child)

    def _start_thread(self) -> None:
        self._queue: collections.deque[Any] = collections.deque()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._worker, name=self._name, daemon=True)
        self._thread.start()

    def _after_fork_in_child(self) -> None:
        if not self._stopped:
            self._forked()
            self._start_thread()

    def _forked(self) -> None:
        """What else a forked child must reset before its thread starts (nothing by default)."""

    # -- request path ------------------------------------------------------------------------
    def put(self, item: Any) -> None:
        """Queue ``item`` for the thread; when the queue is full or stopped, ``_rejected(item)``."""
        queue = self._queue
        if len(queue) >= self._max or self._stopped:
            self._rejected(item)
            return
        queue.append(item)
        if len(queue) >= self._batch:
            self._wake.set()

    def _rejected(self, item: Any) -> None:
        raise NotImplementedError

    # -- the thread --------------------------------------------------------------------------
    def _process(self, batch: list[Any]) -> None:
        raise NotImplementedError

    def _worker(self) -> None:
        while not self._stopped:
            self._wake.wait(self._delay)
            self._wake.clear()
            self._drain_logged("the export loop failed")
        self._drain_logged("the final export failed")

    def _drain_logged(self, kind: str) -> None:
        try:
            self._drain()
        except Exception:  # noqa: BLE001 - the thread must outlive any bug
            self._stats.add("internal_errors")
            self._log_once(kind)

    def _drain(self, limit: int | None = None) -> None:
        """Process queued items in batches; at most ``limit`` of them (None: until the queue is empty)."""
        with self._lock:
            queue = self._queue
            left = len(queue) if limit is None else min(limit, len(queue))
            while left > 0 and queue:
                batch: list[Any] = []
                try:
                    while queue and len(batch) < self._batch and len(batch) < left:
                        batch.append(queue.popleft())
                except IndexError:
                    pass
                left -= len(batch)
                self._process(batch)

    def _log_once(self, kind: str) -> None:
        if self._first(kind):
            _log.exception("ragpulse: %s (further errors of this kind are only counted)", kind)

    # -- lifecycle ---------------------------------------------------------------------------
    def _flush(self, timeout_s: float, flush: Callable[[int], Any] | None, kind: str) -> bool:
        """Process what is queued now (in the caller's thread; other threads may keep adding),
        then call ``flush`` (the next stage's force_flush) with the milliseconds left."""
        deadline = time.monotonic() + timeout_s
        self._drain(limit=len(self._queue))
        if not callable(flush):
            return True
        remaining = max(0, int((deadline - time.monotonic()) * 1000))
        try:
            return bool(flush(remaining))
        except Exception:  # noqa: BLE001
            self._log_once(kind)
            return False

    def _stop(self) -> bool:
        """Stop the thread after its last drain; False if it was stopped already."""
        if self._stopped:
            return False
        self._stopped = True
        self._wake.set()
        self._thread.join(timeout=10)
        return True
