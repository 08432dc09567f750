"""Cost budgets for the LLM judge: per-minute and per-hour spend limits.

Spend is the cost litellm reports for each response (or explicit per-token
prices). Before a request the judge waits in :meth:`CostBudget.acquire` until
both sliding windows have room for the expected cost of one more request; it
never drops the trace. Every wait is counted (``pauses``, ``paused_seconds``)
so that a paused judge is visible in metrics.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

__all__ = ["CostBudget"]


class CostBudget:
    """Sliding-window spend limits. ``None`` disables a window.

    ``minute_seconds``/``hour_seconds`` are the window lengths (60 and 3600 by
    default; shorter windows make a budget testable in seconds).
    """

    def __init__(
        self,
        per_minute_usd: float | None = None,
        per_hour_usd: float | None = None,
        *,
        minute_seconds: float = 60.0,
        hour_seconds: float = 3600.0,
    ) -> None:
        self.windows: list[tuple[float, float]] = [
            (w, float(limit))
            for w, limit in ((minute_seconds, per_minute_usd), (hour_seconds, per_hour_usd))
            if limit is not None
        ]
        self._spent: deque[tuple[float, float]] = deque()
        self._in_flight = 0.0
        self._lock = asyncio.Lock()
        self.pauses = 0
        self.paused_seconds = 0.0
        self.total_usd = 0.0
        self._n = 0

    def _expected(self) -> float:
        return self.total_usd / self._n if self._n else 0.0

    def _spent_in(self, window: float, now: float) -> float:
        return sum(c for t, c in self._spent if t > now - window)

    def _wait_for(self, now: float) -> float:
        """Seconds until one more request fits every window (0 when it fits now)."""
        est = self._expected()
        wait = 0.0
        for window, limit in self.windows:
            spent = self._spent_in(window, now) + self._in_flight
            if spent + est <= limit or (spent == 0 and not self._in_flight):
                continue
            # Earliest time at which enough old spend leaves the window.
            need = spent + est - limit
            freed = 0.0
            for t, c in self._spent:
                if t <= now - window:
                    continue
                freed += c
                if freed >= need:
                    wait = max(wait, t + window - now)
                    break
            else:
                wait = max(wait, window / 20)  # only in-flight spend: re-check soon
        return wait

    async def acquire(self) -> float:
        """Wait until a request fits the budgets; returns the reserved estimate."""
        if not self.windows:
            return 0.0
        paused = False
        t0 = time.monotonic()
        while True:
            async with self._lock:
                now = time.monotonic()
                while self._spent and self._spent[0][0] <= now - max(w for w, _ in self.windows):
                    self._spent.popleft()
                wait = self._wait_for(now)
                if wait <= 0:
                    est = self._expected()
                    self._in_flight += est
                    if paused:
                        self.paused_seconds += time.monotonic() - t0
                    return est
                if not paused:
                    paused = True
                    self.pauses += 1
            await asyncio.sleep(min(wait, 5.0) + 0.01)

    def record(self, reserved: float, cost_usd: float) -> None:
        """Book the actual cost of a finished request (releases its reservation)."""
        self._in_flight = max(0.0, self._in_flight - reserved)
        if self.windows:
            self._spent.append((time.monotonic(), cost_usd))
        self.total_usd += cost_usd
        self._n += 1

    @property
    def exhausted(self) -> bool:
        """Whether a request would have to wait right now."""
        return bool(self.windows) and self._wait_for(time.monotonic()) > 0
