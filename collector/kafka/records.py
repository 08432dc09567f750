"""Native record unpacking for kafka-python's consumer.

kafka-python 3.0 unpacks each fetched record in Python: seven varints, two
slices and two objects per record, about 40 us. For the collector that is
about a third of the main thread (one trace per record, 20,000 records per
bench backlog). :func:`install` puts :func:`_unpack_records` in place of
kafka-python's ``Fetcher.PartitionRecords._unpack_records``; it unpacks each
message-format-v2 batch's records in one native call
(``ragpulse_native.unpack_records``) and keeps kafka-python's bookkeeping
(next fetch offset, leader epoch, bytes and records read, draining).

What stays kafka-python's own:

* consumers with a key or value deserializer, or ``read_committed``
  isolation, use its generator unchanged;
* CRC checks and decompression are its code (C-backed already);
* a batch the native call declines (anything kafka-python would not unpack
  cleanly: see native/src/records.rs) and batches of older message formats are
  unpacked through its record objects, so its errors stay its own.

:func:`install` is guarded: it needs kafka-python 3.0.x and the native module,
and it first unpacks a set of batches both ways (all codecs kafka-python can
write here, keys, values and headers present and null) and installs only when
every record comes out identical. ``RAGPULSE_NATIVE=0`` keeps kafka-python's
unpacking. tests/test_kafka_records.py compares both ways differentially,
including on corrupted batches and through a real broker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

from ..ingest.otlp import native_module

__all__ = ["install", "uninstall", "unpacking_description"]

log = logging.getLogger("ragpulse.collect")

_lock = threading.Lock()
_state: dict[str, Any] = {"stock": None, "description": "kafka-python (not installed)"}


def unpacking_description() -> str:
    """Which record unpacking the process's consumers use, for the start-up log."""
    return _state["description"]


def _batch_by_record(part: Any, tp: Any, batch: Any, record_cls: Any) -> Iterator[Any]:
    """A batch unpacked through kafka-python's record objects (declined or legacy batches)."""
    from kafka.errors import CorruptRecordError

    for record in batch:
        if part.check_crcs and not record.validate_crc():
            raise CorruptRecordError(
                f"Record for partition {part.topic_partition} at offset {record.offset} failed crc check"
            )
        key, value, headers = record.key, record.value, record.headers
        header_size = (
            sum(len(k.encode("utf-8")) + (len(v) if v is not None else 0) for k, v in headers)
            if headers
            else -1
        )
        part.records_read += 1
        part.bytes_read += record.size_in_bytes
        part.next_fetch_offset = record.offset + 1
        yield record_cls(
            tp.topic, tp.partition, part.leader_epoch, record.offset, record.timestamp,
            record.timestamp_type, key, value, headers, record.checksum,
            len(key) if key is not None else -1, len(value) if value is not None else -1, header_size,
        )  # fmt: skip


def _make_unpacker(stock: Any, unpack: Any) -> Any:
    from kafka.consumer.fetcher import ConsumerRecord
    from kafka.errors import CorruptRecordError
    from kafka.protocol.consumer import IsolationLevel

    uncommitted = IsolationLevel.READ_UNCOMMITTED

    def _unpack_records(self: Any, tp: Any, records: Any, key_deserializer: Any, value_deserializer: Any) -> Iterator[Any]:  # fmt: skip
        if (
            key_deserializer is not None
            or value_deserializer is not None
            or self.isolation_level != uncommitted
        ):
            yield from stock(self, tp, records, key_deserializer, value_deserializer)
            return
        try:
            last = None
            batch = records.next_batch()
            while batch is not None:
                last = batch
                if self.check_crcs and not batch.validate_crc():
                    raise CorruptRecordError(
                        f"Record batch for partition {self.topic_partition} at offset "
                        f"{batch.base_offset} failed crc check"
                    )
                unpacked = None
                if batch.magic == 2:
                    self.leader_epoch = batch.leader_epoch
                    if batch.is_control_batch:  # transaction markers are not records
                        self.next_fetch_offset = batch.next_offset
                        batch = records.next_batch()
                        continue
                    iter(batch)  # decompresses, with kafka-python's codecs and errors
                    unpacked = unpack(
                        batch._buffer, batch._pos, batch._num_records, batch.base_offset,
                        batch.first_timestamp, batch.max_timestamp, batch.timestamp_type,
                        tp.topic, tp.partition, self.leader_epoch, ConsumerRecord,
                    )  # fmt: skip
                if unpacked is None:
                    yield from _batch_by_record(self, tp, batch, ConsumerRecord)
                else:
                    for record, size in zip(*unpacked, strict=True):
                        self.records_read += 1
                        self.bytes_read += size
                        self.next_fetch_offset = record.offset + 1
                        yield record
                batch = records.next_batch()
            if last is not None and last.magic == 2:
                # The batch's last offset, even when compaction removed its last records.
                self.next_fetch_offset = last.next_offset
            self.drain()
        except StopIteration as exc:  # would silently end the generator instead of failing
            raise RuntimeError("StopIteration raised unpacking records") from exc

    _unpack_records.ragpulse_native = True  # type: ignore[attr-defined]
    return _unpack_records


def _self_test_batches() -> list[bytes]:
    """Record batches covering what the native unpacking must reproduce."""
    from kafka.codec import has_lz4
    from kafka.record.memory_records import MemoryRecordsBuilder

    out = []
    for codec in (0, 1, 3) if has_lz4() else (0, 1):  # none, gzip, lz4
        for headers in ([], [("h", b"v"), ("é", None), ("", b"")]):
            builder = MemoryRecordsBuilder(2, codec, 1 << 20, offset=1000 + codec)
            for i in range(5):
                key = None if i == 1 else f"k{i}".encode()
                value = None if i == 2 else (b"" if i == 3 else bytes(range(256)) * i)
                builder.append(1_700_000_000_000 + i * 7, key, value, headers)
            builder.close()
            out.append(builder.buffer())
    return out


def _unpack_all(
    data: bytes, check_crcs: bool = True, fetch_offset: int = 0, take: int = 3
) -> tuple[list[Any], int, int, int]:
    """Every record of ``data`` as a consumer's partition records yield them, ``take`` at a
    time from ``fetch_offset`` on, and the bookkeeping after: (records, next fetch offset,
    records read, bytes read)."""
    from kafka.consumer.fetcher import Fetcher
    from kafka.record import MemoryRecords
    from kafka.structs import TopicPartition

    part = Fetcher.PartitionRecords(
        fetch_offset, TopicPartition("t", 3), MemoryRecords(data), check_crcs=check_crcs
    )
    got = []
    while part:  # until drained (kafka-python then drops the record iterator)
        got.extend(part.take(take))
    return got, part.next_fetch_offset, part.records_read, part.bytes_read


def install() -> str:
    """Use native record unpacking in this process's kafka-python consumers, if it is safe.

    Returns (and logs) the description of the unpacking in use. Idempotent; never raises.
    """
    with _lock:
        if _state["stock"] is not None:
            return _state["description"]
        try:
            import kafka
            from kafka.consumer.fetcher import Fetcher
        except ImportError:
            return _state["description"]
        version = getattr(kafka, "__version__", "?")
        unpack = getattr(native_module(), "unpack_records", None)
        if not version.startswith("3.0."):
            _state["description"] = f"kafka-python (native unpacking is written for 3.0.x, not {version})"
        elif unpack is None:
            _state["description"] = "kafka-python (ragpulse_native unavailable or disabled)"
        else:
            stock = Fetcher.PartitionRecords._unpack_records
            try:
                batches = _self_test_batches()
                expected = [_unpack_all(b) for b in batches]
                Fetcher.PartitionRecords._unpack_records = _make_unpacker(stock, unpack)
                same = [_unpack_all(b) for b in batches] == expected
            except Exception as exc:  # noqa: BLE001 - a failed self-test keeps kafka-python's way
                same = False
                log.warning("native Kafka record unpacking failed its self-test: %r", exc)
            if same:
                _state["stock"] = stock
                _state["description"] = "native (ragpulse_native.unpack_records)"
            else:
                Fetcher.PartitionRecords._unpack_records = stock
                _state["description"] = "kafka-python (the native unpacking's self-test differed)"
        return _state["description"]


def uninstall() -> None:
    """Put kafka-python's own record unpacking back (tests compare both)."""
    with _lock:
        stock = _state["stock"]
        if stock is None:
            return
        from kafka.consumer.fetcher import Fetcher

        Fetcher.PartitionRecords._unpack_records = stock
        _state["stock"] = None
        _state["description"] = "kafka-python (uninstalled)"
