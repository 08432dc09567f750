"""Retrying storage calls: exponential backoff, and a loop that waits through outages.

Every stage that writes or reads ClickHouse on a loop (Kafka consumer, judge
service, embedded collector, the sampler's budget reads) retries through
:func:`retry_storage`, so an outage pauses work instead of losing it.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

from ..serve.metrics import Metrics
from .clickhouse import StorageUnavailable

__all__ = ["Backoff", "retry_storage", "default_backoff", "sleep"]

log = logging.getLogger("ragpulse.collector")


class Backoff:
    """Exponential backoff with full jitter between ``initial`` and ``maximum`` seconds."""

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


def default_backoff() -> Backoff:
    return Backoff(0.5, 10.0)


def sleep(delay: float) -> bool:
    time.sleep(delay)
    return True
