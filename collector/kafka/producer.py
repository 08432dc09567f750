"""The ingest loop's producer: judge messages and dead letters, acknowledged before a commit.

Records are sent with ``acks=all``; :meth:`ReliableProducer.await_acks`
returns only once every one is acknowledged, re-sending failures with backoff
(the wait keeps the paused consumer polling). A record the broker refuses as
too large is re-sent with its value cut to 512 KiB and a ``ragpulse.truncated``
header, rather than blocking the partition's commits for good.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..storage.retry import Backoff, Wait
from .clients import TRUNCATED_HEADER, Send, kafka_client_settings

__all__ = ["ReliableProducer"]

log = logging.getLogger("ragpulse.collect")

_TRUNCATE_TO = 512 << 10
_FLUSH_TIMEOUT_S = 30

Started = list[tuple[Send, Any]]  # sends with their futures


class ReliableProducer:
    """A kafka-python producer whose sends are awaited before offsets move on."""

    def __init__(self, config: dict[str, Any]) -> None:
        from kafka import KafkaProducer

        self._producer = KafkaProducer(
            **kafka_client_settings(config),
            acks="all",
            linger_ms=20,
            retries=10,
            max_in_flight_requests_per_connection=1,
            compression_type="lz4",
            max_request_size=4 << 20,
        )

    def start(self, sends: list[Send]) -> Started:
        """Send without waiting; the acknowledgements arrive while the loop goes on."""
        send = self._producer.send
        return [(s, send(s[0], key=s[1], value=s[2], headers=s[3])) for s in sends]

    def await_acks(self, started: Started, backoff: Callable[[], Backoff], wait: Wait) -> None:
        """Wait until every send is acknowledged, re-sending failures after ``wait(delay)``
        (delays from ``backoff()``); nothing should be committed before this returns."""
        from kafka.errors import MessageSizeTooLargeError

        delays = backoff()
        while started:
            self._producer.flush(timeout=_FLUSH_TIMEOUT_S)
            failed = []
            for s, f in started:
                if f.is_done and not f.failed():
                    continue
                err = f.exception if f.is_done else "not acknowledged in time"
                if isinstance(err, MessageSizeTooLargeError) and s[2] is not None:
                    s = (s[0], s[1], s[2][:_TRUNCATE_TO], [*s[3], (TRUNCATED_HEADER, b"1")])
                failed.append(s)
                log.warning("produce to %s failed: %s; retrying", s[0], err)
            if not failed:
                return
            wait(delays.next())
            started = self.start(failed)

    def close(self) -> None:
        try:
            self._producer.close(timeout=2)
        except Exception:  # noqa: BLE001 - closing on the way out
            pass
