"""Consumer lag, the same way for every Kafka loop: records behind the fetched high-water mark.

``ragpulse_consumer_lag{topic, partition}`` is read at scrape time (core/state.py) from
each loop that consumes: the ingest loop for the spans topic, each judge worker for the
judge topic. Per partition the loop has read from, the lag is the partition's high-water
mark as of the consumer's last fetch less the next offset the loop will read; a partition
assigned but not read yet (or not fetched yet) has no value rather than a guess. Neither
figure costs a request: kafka-python keeps the high-water mark from fetch responses, and
the loop records its own read positions (:class:`ReadPositions`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["ReadPositions", "lag_of"]

Lag = list[tuple[tuple[str, str], int]]


def lag_of(consumer: Any, next_offset: Callable[[int], int | None]) -> Lag:
    """((topic, partition), records behind) for each partition assigned to ``consumer`` with a
    known high-water mark and a known next offset (``next_offset(partition)``)."""
    out: Lag = []
    for tp in list(consumer.assignment()) if consumer is not None else []:
        high, pos = consumer.highwater(tp), next_offset(tp.partition)
        if high is not None and pos is not None:
            out.append(((tp.topic, str(tp.partition)), max(0, high - pos)))
    return out


class ReadPositions:
    """The next offset to read per partition, from what a loop's polls returned (the loop's
    thread writes, the metrics thread reads a plain dict)."""

    def __init__(self) -> None:
        self.next: dict[int, int] = {}

    def read(self, polled: Mapping[Any, list[Any]], assigned: Iterable[Any]) -> None:
        """Record a poll's result (``{TopicPartition: [records]}``) and forget the partitions no
        longer ``assigned`` (a partition that comes back starts from its committed offset)."""
        keep = {tp.partition for tp in assigned}
        for gone in self.next.keys() - keep:
            del self.next[gone]
        for tp, records in polled.items():
            if records:
                self.next[tp.partition] = records[-1].offset + 1

    def lag(self, consumer: Any) -> Lag:
        """:func:`lag_of` ``consumer`` with these positions."""
        return lag_of(consumer, self.next.get)
