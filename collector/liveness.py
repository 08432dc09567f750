"""Liveness: notice a Kafka poll that never returns, so ``/healthz`` can say so.

``KafkaConsumer.poll(timeout_ms=...)`` returns within its timeout, or within a
rebalance's few seconds. kafka-python 3.0.12 does its network work through
blocking cross-thread calls without timeouts (``NetworkSelector.run`` waits on
an ``Event`` for its IO thread), so a lost task there blocks a poll forever.
Nothing inside the process can unblock that, but a liveness probe can restart
the process, and offsets committed only after storage make a restart lose
nothing. Each polling loop wraps its poll in :meth:`PollWatch.watching`;
``/healthz`` answers 503 while a poll has been running longer than the stall
limit. (A group join that never completes while polls keep returning, seen in
tests, is not caught by this: docs/collector.md, "Metrics, health, readiness".)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PollWatch", "DEFAULT_STALL_S"]

DEFAULT_STALL_S = 120.0  # well above a rebalance (session timeouts are seconds)


class PollWatch:
    """When each named loop's current poll started (thread-safe, cheap per poll)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: dict[str, float] = {}

    @contextmanager
    def watching(self, name: str) -> Iterator[None]:
        """Mark ``name`` as inside a poll for the duration of the block."""
        with self._lock:
            self._since[name] = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self._since.pop(name, None)

    def stuck(self, longer_than: float) -> dict[str, float]:
        """Loops whose current poll has run for more than ``longer_than`` seconds, with how long."""
        now = time.monotonic()
        with self._lock:
            return {n: now - t for n, t in self._since.items() if now - t > longer_than}
