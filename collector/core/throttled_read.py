"""A store read shared by every Prometheus scrape: made at most once per ``refresh_s``.

The collectors that serve figures from storage at scrape time (the review gauges, the
session counters) must never let scrapes hammer the store, nor fail a scrape because a read
failed. :class:`ThrottledRead` holds that policy once: a scrape within ``refresh_s`` of the
last read gets that read's result; a scrape arriving while another reads waits for it; a read
that raises is logged and answers None until the next one succeeds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from prometheus_client.registry import Collector

__all__ = ["ThrottledRead", "StoreCollector"]

log = logging.getLogger("ragpulse.metrics")
T = TypeVar("T")


class ThrottledRead(Generic[T]):
    """``read()`` made again only when the last one is ``refresh_s`` old (``clock`` seconds)."""

    def __init__(
        self, what: str, read: Callable[[], T], refresh_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """``what`` names the figures in the warning a failed read logs."""
        self.what = what
        self.read = read
        self.refresh_s = float(refresh_s)
        self.clock = clock
        self.reads = 0  # reads made (each may be several queries)
        self._lock = threading.Lock()
        self._result: T | None = None
        self._read_at: float | None = None

    def get(self) -> T | None:
        """The last read's result, read again first when it is older than ``refresh_s``; None
        when that read failed."""
        with self._lock:
            now = self.clock()
            if self._read_at is None or now - self._read_at >= self.refresh_s:
                self._read_at = now
                self.reads += 1
                try:
                    self._result = self.read()
                except Exception:  # noqa: BLE001 - a scrape never fails on a store read
                    log.warning("%s: reading the store failed", self.what, exc_info=True)
                    self._result = None
            return self._result


class StoreCollector(Collector):
    """A prometheus-client collector whose figures come from one :class:`ThrottledRead` of
    :meth:`_read`; subclasses yield their families from :meth:`latest`."""

    def __init__(self, what: str, refresh_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.reader: ThrottledRead[Any] = ThrottledRead(what, self._read, refresh_s, clock)
        """The store read behind every scrape (its ``reads`` and ``refresh_s`` say how often)."""

    def _read(self) -> Any:
        raise NotImplementedError

    def latest(self) -> Any:
        """The last read's result (read again when stale); None when that read failed."""
        return self.reader.get()
