"""Retrying storage calls: exponential backoff, and a loop that waits through outages.

Every stage that writes or reads ClickHouse on a loop (Kafka consumer, judge
service, embedded collector, the sampler's budget reads) retries through one
:class:`StorageRetry`, built once per loop from the ``storage`` settings with
that loop's wait function, so an outage pauses work instead of losing it, and
the loop's wait keeps doing what it must meanwhile (the Kafka loop keeps
polling with consumption paused, every loop notices shutdown).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..core.metrics import Metrics
from .clickhouse import StorageUnavailable

__all__ = ["Backoff", "StorageRetry", "Wait", "retry_storage"]

log = logging.getLogger("ragpulse.collector")

T = TypeVar("T")
# Called with a delay in seconds between attempts; returns False when the caller must give up.
Wait = Callable[[float], bool]


class Backoff:
    """Exponential backoff: attempt n waits a uniform random time between half and all of
    ``min(maximum, initial * 2**n)`` seconds (half jitter: retries spread out, yet each
    waits at least half the step)."""

    def __init__(self, initial: float = 0.5, maximum: float = 10.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self.attempt = 0

    def next(self) -> float:
        delay = min(self.maximum, self.initial * (2**self.attempt))
        self.attempt += 1
        return random.uniform(delay / 2, delay)

    def reset(self) -> None:
        self.attempt = 0


def retry_storage(
    op: Callable[[], Any],
    metrics: Metrics,
    backoff: Backoff,
    wait: Callable[[float], bool],
) -> Any:
    """Run ``op`` until it succeeds; on StorageUnavailable call ``wait(delay)``.

    ``wait`` sleeps (and, for Kafka, keeps the paused consumer alive); it
    returns False when the caller must give up (shutdown), in which case the
    StorageUnavailable is re-raised and nothing is committed.
    """
    backoff.reset()
    while True:
        try:
            result = op()
        except StorageUnavailable as exc:
            metrics.storage_up.set(0)
            metrics.storage_retries.inc()
            delay = backoff.next()
            log.warning("storage unavailable (%s); retrying in %.1fs", str(exc).splitlines()[0][:200], delay)
            if not wait(delay):
                raise
            continue
        metrics.storage_up.set(1)
        return result


class StorageRetry:
    """One loop's storage retries: the backoff settings of the ``storage`` section and the
    loop's own wait, so every storage call of that loop waits the same way."""

    def __init__(self, metrics: Metrics, wait: Wait, initial_s: float = 0.5, max_s: float = 10.0) -> None:
        self.metrics = metrics
        self.wait = wait
        self.initial_s = initial_s
        self.max_s = max_s

    @classmethod
    def from_config(cls, storage: Mapping[str, Any], metrics: Metrics, wait: Wait) -> StorageRetry:
        """From the ``storage`` section (``retry_initial_s``, ``retry_max_s``)."""
        return cls(metrics, wait, float(storage["retry_initial_s"]), float(storage["retry_max_s"]))

    def backoff(self) -> Backoff:
        """A fresh backoff with these settings (also for retries that are not storage calls)."""
        return Backoff(self.initial_s, self.max_s)

    def __call__(self, op: Callable[[], T], wait: Wait | None = None) -> T:
        """``op()`` retried through outages; ``wait`` overrides the loop's wait for this call."""
        return retry_storage(op, self.metrics, self.backoff(), wait or self.wait)
