"""What every Kafka stage of the collector shares: client settings, header names, one send.

The ingest loop (:mod:`.collector`), its producer (:mod:`.producer`), the
dead-letter writer (:mod:`.deadletter`) and the judge service
(:mod:`..judge.service.kafka_loop`) build their clients and records from here, so the
security pass-through and the header names are defined once.
"""

from __future__ import annotations

from typing import Any

__all__ = ["kafka_client_settings", "Send", "REASON_HEADER", "SOURCE_HEADER", "TRUNCATED_HEADER"]

REASON_HEADER = "ragpulse.reason"  # why a record was dead-lettered
SOURCE_HEADER = "ragpulse.source"  # topic/partition/offset a dead letter came from
TRUNCATED_HEADER = "ragpulse.truncated"  # value cut to fit the broker's message size

# A record to produce: (topic, key, value, headers).
Send = tuple[str, bytes | None, bytes | None, list[tuple[str, bytes]]]


def kafka_client_settings(config: dict[str, Any]) -> dict[str, Any]:
    """bootstrap servers plus the ``kafka.security`` pass-through settings."""
    k = config["kafka"]
    return {"bootstrap_servers": k["bootstrap_servers"].split(","), **(k.get("security") or {})}
