"""Liveness: notice a Kafka poll that never returns, so ``/healthz`` can say so.

``KafkaConsumer.poll(timeout_ms=...)`` returns within its timeout, or within a
rebalance's few seconds. kafka-python 3.0.12 does its network work through
blocking cross-thread calls without timeouts (``NetworkSelector.run`` waits on
an ``Event`` for its IO thread), so a lost task there blocks a poll forever.
Nothing inside the process can unblock that, but a liveness probe can restart
the process, and offsets committed only after storage make a restart lose
nothing. Each polling loop wraps its poll in :meth:`PollWatch.watching`;
``/healthz`` answers 503 while a poll has been running longer than the stall
limit.

The failure actually seen in tests is quieter: a consumer group join that
never completes while polls keep returning, with no partitions assigned. Its
cause, a kafka-python race, is worked around by
:mod:`ragpulse.collector.group_join`; as a second line of defence each loop
also reports after every poll whether its
consumer is rebalancing (:func:`rebalancing`); a rebalance that lasts longer
than the broker could legitimately hold it (the rebalance timeout, i.e.
``max_poll_interval_ms``) plus the stall limit counts as stuck too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["PollWatch", "DEFAULT_STALL_S", "rebalancing", "rebalance_allowance_s"]

DEFAULT_STALL_S = 120.0  # well above a rebalance (session timeouts are seconds)
_SYNC_ALLOWANCE_S = 30.0  # a SyncGroup round trip (kafka-python's request timeout)


def rebalance_allowance_s(max_poll_interval_ms: int) -> float:
    """The longest a legitimate group join may take for a consumer: the broker holds a join
    open for up to the rebalance timeout (``max_poll_interval_ms``), then the SyncGroup
    round trip follows."""
    return max_poll_interval_ms / 1000 + _SYNC_ALLOWANCE_S


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


def rebalancing(consumer: Any) -> bool:
    """True while a kafka-python consumer's group membership is being (re)negotiated.

    Reads the coordinator's member state, which kafka-python does not expose
    publicly (3.0.x: ``consumer._coordinator.state``, one of the string
    constants of ``kafka.structs.MemberState``); any other shape reads as not
    rebalancing, so the watch fails open.
    """
    try:
        from kafka.structs import MemberState
    except ImportError:  # another kafka-python: no watch
        return False
    state = getattr(getattr(consumer, "_coordinator", None), "state", None)
    return state is not None and state == getattr(MemberState, "REBALANCING", object())
