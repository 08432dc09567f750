"""When each polling loop's current poll started, for the liveness answer (``/healthz``).

Every polling loop marks its polls here; :class:`..serve.health.Health` reads which loops are
stuck. It lives on the ground floor because the metrics registry holds one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PollWatch"]


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
