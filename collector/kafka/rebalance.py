"""Rebalance events, queued by kafka-python's listener and applied by the ingest loop.

kafka-python 3 runs rebalance listeners on its event-loop thread, concurrently
with the loop's thread. The listener therefore only queues the event; the loop
applies it before it next touches consumer state (after every poll, before it
cuts a batch and before it commits). Mutating the loop's state from the
listener raced with record handling: a record handled after the drop could
move the read offset past traces that were just dropped, and the next commit
skipped them (lost). Until the loop applies a revocation its state is merely
stale: commits for partitions no longer assigned are filtered out, and the
held offsets still cover everything buffered. What was stored but not
committed for a revoked partition is replayed by its new owner (idempotent
storage); what was buffered is dropped and re-read by the new owner.

Two things follow a rebalance and are kept here until the loop does them:
partitions assigned again after a revocation are rewound to their committed
offsets (kafka-python keeps the fetch position, but their buffered spans were
dropped), and newly assigned partitions need their replay marks read from
storage before their traces are sampled.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

__all__ = ["RebalanceEvents"]

log = logging.getLogger("ragpulse.collect")


class RebalanceEvents:
    """The queue between kafka-python's rebalance listener and the loop (see above)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._events: deque[tuple[str, set[int]]] = deque()
        self.need_marks: set[int] = set()  # assigned, replay marks not read yet
        self.rewind: set[int] = set()  # revoked since the last rewind

    def listener(self) -> Any:
        """A ``ConsumerRebalanceListener`` that queues events (runs on kafka-python's thread)."""
        from kafka import ConsumerRebalanceListener

        events = self._events

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                events.append(("revoked", {tp.partition for tp in revoked}))

            def on_partitions_assigned(self, assigned: Any) -> None:
                events.append(("assigned", {tp.partition for tp in assigned}))

        return Listener()

    def pop(self) -> tuple[str, set[int]] | None:
        """The oldest queued event, (``"revoked"`` or ``"assigned"``, partitions), or None."""
        return self._events.popleft() if self._events else None

    def revoked(self, parts: set[int]) -> None:
        self.need_marks -= parts
        self.rewind |= parts

    def assigned(self, parts: set[int]) -> None:
        self.need_marks |= parts

    def take_need_marks(self) -> set[int]:
        parts, self.need_marks = self.need_marks, set()
        return parts

    def rewind_retained(self, consumer: Any) -> set[int]:
        """Seek partitions assigned again after a revocation back to their committed offsets
        (right after poll); the records that poll returned for them are to be skipped."""
        from kafka import TopicPartition

        assigned = {tp.partition for tp in consumer.assignment()}
        parts, self.rewind = self.rewind & assigned, set()
        for p in parts:
            tp = TopicPartition(self.topic, p)
            committed = consumer.committed(tp)
            if committed is None:
                consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, committed)
        if parts:
            log.info("partitions %s assigned again: rewound to their committed offsets", sorted(parts))
        return parts
