"""Dead letters: records the collector cannot use, kept as they came, with the reason.

A dead letter is the original record (key and value unchanged) produced to
``kafka.deadletter_topic`` with the reason in the ``ragpulse.reason`` header
and its origin (``topic/partition/offset``) in ``ragpulse.source``. The ingest
loop collects them per batch in :class:`DeadLetters` and produces them with
the batch, so they are acknowledged before the batch's offsets are committed;
the judge service uses :func:`dead_letter` for the messages it cannot read.
"""

from __future__ import annotations

from typing import Any

from ..core.metrics import Metrics
from .clients import REASON_HEADER, SOURCE_HEADER, Send

__all__ = ["DeadLetters", "dead_letter"]

_MAX_REASON = 2000


def dead_letter(topic: str, rec: Any, reason: str) -> Send:
    """The dead letter of consumer record ``rec``, for ``topic``."""
    headers = [
        (REASON_HEADER, reason[:_MAX_REASON].encode("utf-8", "replace")),
        (SOURCE_HEADER, f"{rec.topic}/{rec.partition}/{rec.offset}".encode()),
    ]
    return (topic, rec.key, rec.value, headers)


class DeadLetters:
    """Records set aside since the last batch: (record, reason, kind) with ``kind`` the
    ``ragpulse_deadlettered_total`` label (undecodable, oversized, invalid_spans...)."""

    def __init__(self, topic: str, metrics: Metrics) -> None:
        self.topic = topic
        self.metrics = metrics
        self.items: list[tuple[Any, str, str]] = []

    def __len__(self) -> int:
        return len(self.items)

    def add(self, rec: Any, reason: str, kind: str) -> None:
        self.items.append((rec, reason, kind))

    def add_errors(self, rec: Any, errors: list[str]) -> None:
        """A record with some invalid spans (its valid spans are used)."""
        reason = f"{len(errors)} invalid span(s): " + "; ".join(errors[:3])
        self.add(rec, reason, "oversized" if any("exceeds" in e for e in errors) else "invalid_spans")

    def take(self) -> list[tuple[Any, str, str]]:
        items, self.items = self.items, []
        return items

    def drop_partitions(self, parts: set[int]) -> None:
        """Forget revoked partitions' records: their new owner dead-letters them."""
        self.items = without_partitions(self.items, parts)

    def sends(self, items: list[tuple[Any, str, str]]) -> list[Send]:
        """The records to produce for ``items`` (counted by kind as they are made)."""
        out = []
        for rec, reason, kind in items:
            out.append(dead_letter(self.topic, rec, reason))
            self.metrics.deadlettered.labels(kind).inc()
        return out


def without_partitions(items: list[tuple[Any, str, str]], parts: set[int]) -> list[tuple[Any, str, str]]:
    return [d for d in items if d[0].partition not in parts]
