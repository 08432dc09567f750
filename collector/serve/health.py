"""Health of the process, for ``/healthz`` (alive) and ``/readyz`` (ready for traffic).

``/healthz`` fails (503) while a loop's Kafka poll has been running longer
than the stall limit, or its consumer group join has lasted longer than the
join may legitimately take plus that limit (:class:`PollWatch`, filled in by
every polling loop); a liveness probe then restarts the process, which loses
nothing because offsets are committed only after storage. ``/readyz``
answers the owner's readiness check (the Kafka loop: running with partitions
assigned). Metrics are served beside these on the same port but are not part
of the answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Health", "PollWatch", "DEFAULT_STALL_S"]

DEFAULT_STALL_S = 120.0  # well above a rebalance (session timeouts are seconds)


class PollWatch:
    """When each named loop's current poll started (thread-safe, cheap per poll)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: dict[str, float] = {}
        self._joining: dict[str, tuple[float, float]] = {}  # name -> (since, allowed seconds)

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

    def joining(self, name: str, rebalancing: bool, allowed_s: float) -> float:
        """Record after a poll whether ``name``'s consumer is (still) rebalancing; returns for
        how long it has been, 0.0 when it is not. ``allowed_s`` is the longest a legitimate
        rebalance may take for that consumer."""
        with self._lock:
            if not rebalancing:
                self._joining.pop(name, None)
                return 0.0
            since, _ = self._joining.setdefault(name, (time.monotonic(), allowed_s))
        return time.monotonic() - since

    def stuck(self, longer_than: float) -> dict[str, float]:
        """Loops whose current poll has run for more than ``longer_than`` seconds, or whose
        rebalance has lasted more than its allowed time plus ``longer_than``, with how long."""
        now = time.monotonic()
        with self._lock:
            out = {n: now - t for n, t in self._since.items() if now - t > longer_than}
            for n, (t, allowed) in self._joining.items():
                if now - t > allowed + longer_than:
                    out[f"{n} (group join)"] = now - t
        return out


class Health:
    """The answers of ``/healthz`` and ``/readyz`` as (HTTP status, body)."""

    def __init__(
        self, polls: PollWatch, ready: Callable[[], bool] | None = None, stall_s: float = DEFAULT_STALL_S
    ) -> None:
        self.polls = polls
        self.ready = ready or (lambda: True)
        self.stall_s = stall_s

    def healthz(self) -> tuple[int, bytes]:
        stuck = self.polls.stuck(self.stall_s)
        if not stuck:
            return 200, b"ok\n"
        text = ", ".join(f"{n} stuck for {s:.0f}s" for n, s in sorted(stuck.items()))
        return 503, f"stalled: {text}\n".encode()

    def readyz(self) -> tuple[int, bytes]:
        try:
            ok = bool(self.ready())
        except Exception:  # noqa: BLE001 - not ready is the answer
            ok = False
        return (200, b"ready\n") if ok else (503, b"not ready\n")
