"""When an ingest loop cuts a storage batch: the one batching policy of every loop.

Both the Kafka loop and the embedded collector's loop collect assembled traces
here and ask :meth:`Batcher.due` after each step. An insert has a fixed cost
(tens of milliseconds whatever its size), so batches are as large as the
settings allow while traffic keeps coming, and cut sooner once the loop has
caught up with its input, so light traffic is stored within a fraction of the
timer and still makes at most a few inserts a second.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Batcher"]


class Batcher:
    """Ready traces waiting to be stored, and whether it is time to store them.

    A batch is due when ``max_traces`` are ready, or when ``max_seconds`` have
    passed since the last cut and there is something to store. A loop that has
    caught up (nothing was waiting behind its last read) does not wait for the timer: it
    cuts once a quarter of ``max_traces`` is ready or a quarter of the timer
    has passed.
    """

    def __init__(self, max_traces: int, max_seconds: float, now: float) -> None:
        self.max_traces = int(max_traces)
        self.max_seconds = float(max_seconds)
        self.ready: list[Any] = []
        self.last_cut = now

    def __len__(self) -> int:
        return len(self.ready)

    def add(self, traces: list[Any]) -> None:
        self.ready.extend(traces)

    def due(self, now: float, caught_up: bool, pending: bool = False) -> bool:
        """True when the loop should cut a batch now. ``pending``: the loop has other work a
        batch would finish (e.g. dead letters to produce, offsets to commit) even without
        ready traces."""
        n = len(self.ready)
        if n >= self.max_traces:
            return True
        waited = now - self.last_cut
        timer = waited >= self.max_seconds or (
            caught_up and (n >= self.max_traces // 4 or waited >= self.max_seconds / 4)
        )
        return timer and (n > 0 or pending)

    def take(self, now: float) -> list[Any]:
        """The ready traces, emptying the batcher; the timer restarts at ``now``."""
        out, self.ready = self.ready, []
        self.last_cut = now
        return out
