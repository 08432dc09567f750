"""Counters of what the agent did with spans: nothing is dropped without being counted.

Read them with ``ragpulse.agent.stats()``. Increments take a lock; they happen
in the export thread, or on the request path only when a span is dropped.
"""

from __future__ import annotations

import threading

__all__ = ["Stats", "DROP_REASONS"]

DROP_REASONS = (
    "queue_full",  # the bounded in-process queue was full at span end
    "export_failed",  # the exporter reported failure (e.g. broker unreachable, send timed out)
    "delivery_failed",  # Kafka did not acknowledge a record before delivery_timeout_ms
    "no_sink",  # exporter "embedded" with no sink installed
    "oversize",  # one span could not be shrunk under max_record_bytes
    "internal_error",  # a ragpulse bug while materialising or encoding; logged once per kind
    "shutdown",  # ended after shutdown()
)


class Stats:
    """Thread-safe counters; ``snapshot()`` returns a plain dict."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self._lock = threading.Lock()
        self.spans_exported = 0
        self.records_sent = 0
        self.records_acked = 0
        self.internal_errors = 0
        self.truncated_spans = 0  # spans with rag.truncated (a limit cut a value or the chunk list)
        # exporter="none": retrieval spans whose documents went into one JSON attribute to fit the
        # application's span attribute limit, and attributes that provider dropped all the same.
        self.compacted_spans = 0
        self.attributes_dropped = 0
        self.feedback_sent = 0  # feedback spans queued for export (ragpulse.agent.feedback)
        self.feedback_invalid = 0  # feedback calls with invalid arguments, logged and dropped
        self.dropped = dict.fromkeys(DROP_REASONS, 0)

    def drop(self, reason: str, n: int = 1) -> None:
        with self._lock:
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def snapshot(self) -> dict[str, object]:
        with self._lock:
            return {
                "spans_exported": self.spans_exported,
                "records_sent": self.records_sent,
                "records_acked": self.records_acked,
                "internal_errors": self.internal_errors,
                "truncated_spans": self.truncated_spans,
                "compacted_spans": self.compacted_spans,
                "attributes_dropped": self.attributes_dropped,
                "feedback_sent": self.feedback_sent,
                "feedback_invalid": self.feedback_invalid,
                "spans_dropped": sum(self.dropped.values()),
                "dropped": dict(self.dropped),
            }
