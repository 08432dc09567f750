"""The ingest loop's batches and the writer thread that stores them.

A :class:`Batch` is cut by the loop: its traces' rows encoded into one block,
its dead letters, the judge messages sent for it, and the offsets it lets the
loop commit. :class:`BatchWriter` stores at most one batch at a time on its
own thread: during the insert chDB (or the HTTP client) releases the GIL, so
storing one batch overlaps decoding the next. Encoding reads Python objects,
so it stays on the loop's thread, which hands the writer one joined block.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..ingest.pipeline import Ingestor
from ..storage.clickhouse import StorageUnavailable
from ..storage.retry import StorageRetry, Wait
from ..storage.rows import EncodedRows
from .offsets import Targets
from .producer import Started

__all__ = ["NO_ROWS", "Batch", "BatchWriter"]

NO_ROWS = EncodedRows(b"", "")  # a batch with nothing for rag_traces (only its feedback step)

log = logging.getLogger("ragpulse.collect")


class Batch:
    """Traces and dead letters cut together, the offsets they let the loop commit, the store."""

    __slots__ = ("sent", "count", "dead", "targets", "started", "rows", "future", "after_store", "requeued")

    def __init__(
        self, count: int, dead: list[tuple[Any, str, str]], targets: Targets, started: float
    ) -> None:
        self.sent: Started = []  # judge messages sent, with their futures
        self.count = count  # traces in the batch
        self.dead = dead
        self.targets = targets
        self.started = started
        self.rows = NO_ROWS  # the encoded rows (kept for a retry on the loop's thread)
        self.future: Future[None] | None = None
        # The feedback stage's storage step (collector/feedback/sink.py), run after the rows,
        # and the judge messages it returned, which the batch sends before its commit.
        self.after_store: Any = None
        self.requeued: list[dict[str, Any]] = []

    def done(self) -> bool:
        return self.future is None or self.future.done()


class BatchWriter:
    """Stores batches' rows on one writer thread; retries on the loop's thread."""

    def __init__(self, ingestor: Ingestor) -> None:
        self.ingestor = ingestor
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ragpulse-writer")

    def submit(self, batch: Batch, rows: EncodedRows) -> None:
        batch.rows = rows
        batch.future = self._pool.submit(self._store, batch)

    def wait_stored(self, batch: Batch, retry: StorageRetry, wait: Wait) -> None:
        """Return once the batch's rows are stored. While storage is down the insert is
        retried here, on the loop's thread, whose ``wait`` keeps the paused consumer alive."""
        if batch.future is None:
            return
        try:
            batch.future.result()
        except StorageUnavailable as exc:
            retry.metrics.storage_up.set(0)
            retry.metrics.storage_retries.inc()
            log.warning("storage unavailable (%s); retrying", str(exc).splitlines()[0][:200])
            retry(lambda: self._store(batch), wait)
        retry.metrics.storage_up.set(1)
        batch.rows = NO_ROWS

    def _store(self, batch: Batch) -> None:
        if batch.count:
            self.ingestor.store_encoded(batch.rows, batch.count)
        if batch.after_store is not None:
            batch.requeued = batch.after_store()

    def shutdown(self) -> None:
        """Wait for an insert in flight (before storage closes)."""
        self._pool.shutdown(wait=True)
