"""Which Kafka offsets the ingest loop may commit, and committing them.

Per partition the tracker knows the last offset read, the last offset
committed, and a revocation epoch that is bumped each time the partition is
revoked. A batch fixes its commit *targets* when it is cut: per partition, the
smallest offset still feeding a trace the assembler buffers, or the next unread
offset when none is buffered, with the epoch at that time. A target is
committed only if the partition is still assigned and its epoch unchanged, so
a batch cut before a rebalance never commits past what the partition's new
owner must replay. Main thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

__all__ = ["OffsetTracker", "Targets"]

log = logging.getLogger("ragpulse.collect")

# Per partition: (offset to commit, revocation epoch when the batch was cut).
Targets = dict[int, tuple[int, int]]


class OffsetTracker:
    """Offsets read and committed per partition of one topic (see the module docstring)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.seen: dict[int, int] = {}  # last offset read
        self.committed: dict[int, int] = {}
        self.epochs: dict[int, int] = {}
        # Asynchronous commits not yet answered: (future, offsets, epochs when sent).
        self._pending: list[tuple[Any, dict[Any, Any], dict[int, int]]] = []

    def read(self, partition: int, offset: int) -> None:
        self.seen[partition] = offset

    def next_offset(self, partition: int) -> int | None:
        """The next offset the loop will read from ``partition`` (None before the first)."""
        seen = self.seen.get(partition)
        return None if seen is None else seen + 1

    def targets(self, held: Mapping[int, int]) -> Targets:
        """Commit targets for everything read so far; ``held``: per partition, the smallest
        offset still feeding a buffered trace (those records are not committed past)."""
        out = {}
        for part, seen in self.seen.items():
            target = held.get(part, seen + 1)
            if target > self.committed.get(part, -1):
                out[part] = (target, self.epochs.get(part, 0))
        return out

    def revoked(self, parts: set[int]) -> None:
        """Forget revoked partitions; their epochs move on, voiding targets cut before."""
        for p in parts:
            self.epochs[p] = self.epochs.get(p, 0) + 1
            self.seen.pop(p, None)
            self.committed.pop(p, None)

    def assigned(self, parts: set[int]) -> None:
        for p in parts:
            self.committed.pop(p, None)

    def commit(self, consumer: Any, targets: Targets, wait: bool = False) -> None:
        """Commit ``targets`` for partitions still assigned in the same epoch.

        While running, commits are asynchronous: everything they cover is already stored and
        acknowledged, so waiting for the broker's answer only stalls the loop. A commit that
        fails is superseded by the next one, or its records are replayed (idempotent storage).
        The last commit before exiting waits (``wait``).
        """
        from kafka import TopicPartition
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        self.settle()
        assigned = {tp.partition for tp in consumer.assignment()}
        offsets = {
            TopicPartition(self.topic, part): OffsetAndMetadata(target, "", -1)
            for part, (target, epoch) in targets.items()
            if part in assigned
            and self.epochs.get(part, 0) == epoch
            and target > self.committed.get(part, -1)
        }
        if not offsets:
            return
        epochs = {tp.partition: self.epochs.get(tp.partition, 0) for tp in offsets}
        try:
            if not wait:
                self._pending.append((consumer.commit_async(offsets), offsets, epochs))
                return
            consumer.commit(offsets)
        except KafkaError as exc:
            # Typically a rebalance moved the partition: its new owner replays from the last
            # committed offset (storage is idempotent). If we keep it, the next flush commits.
            log.warning("commit of %s failed (%s); will be retried or replayed", offsets, exc)
            return
        self._committed_now(offsets, epochs)

    def settle(self) -> None:
        """Record the asynchronous commits the broker has answered."""
        pending = []
        for future, offsets, epochs in self._pending:
            if not future.is_done:
                pending.append((future, offsets, epochs))
            elif future.succeeded():
                self._committed_now(offsets, epochs)
            else:
                log.warning(
                    "commit of %s failed (%s); will be retried or replayed", offsets, future.exception
                )
        self._pending = pending

    def _committed_now(self, offsets: dict[Any, Any], epochs: dict[int, int]) -> None:
        for tp, om in offsets.items():
            part = tp.partition
            if self.epochs.get(part, 0) == epochs[part] and om.offset > self.committed.get(part, -1):
                self.committed[part] = om.offset
