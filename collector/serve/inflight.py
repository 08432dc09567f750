"""A cap on the request body bytes the OTLP/HTTP intake holds at once.

Each connection has its own thread, so without a cap N concurrent requests
hold N bodies (and, when compressed, N inflated bodies) however small each
one is bounded. A request reserves what it may hold before its body is read:
its ``Content-Length``, plus ``max_record_bytes`` when it is compressed (the
most its inflated body can take). When the reservation would pass
``receiver.max_inflight_bytes`` the request is refused at once with 503 and
``Retry-After`` (OTLP exporters retry on it) without reading its body into
memory. Reservations are returned when the request is answered.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .intake_body import IntakeRejected

__all__ = ["InflightBytes", "Hold"]

RETRY_AFTER_S = 1


class Hold:
    """The reservation of one request; :meth:`take` adds to it, the owner returns it all."""

    def __init__(self, owner: InflightBytes) -> None:
        self.owner = owner
        self.bytes = 0

    def take(self, n: int, unread: int) -> None:
        """Reserve ``n`` more bytes, or raise a 503 :class:`IntakeRejected` (``unread`` bytes of
        body are still on the wire: the connection is drained and closed)."""
        if not self.owner.acquire(n):
            raise IntakeRejected(
                503,
                f"intake busy: {self.owner.held} request body bytes in flight "
                f"(receiver.max_inflight_bytes {self.owner.limit}); retry later",
                close=True,
                unread=unread,
                retry_after=RETRY_AFTER_S,
            )
        self.bytes += n


class InflightBytes:
    """A byte budget shared by the intake's request threads."""

    def __init__(self, limit: int) -> None:
        self.limit = int(limit)
        self.held = 0
        self._lock = threading.Lock()

    def acquire(self, n: int) -> bool:
        """Take ``n`` bytes when they fit; a single request larger than the whole cap never fits."""
        with self._lock:
            if self.held + n > self.limit:
                return False
            self.held += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self.held -= n

    @contextmanager
    def request(self) -> Iterator[Hold]:
        """One request's reservation, returned when the block ends."""
        hold = Hold(self)
        try:
            yield hold
        finally:
            if hold.bytes:
                self.release(hold.bytes)
