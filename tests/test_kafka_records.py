"""Native Kafka record unpacking (collector/kafka/records.py) against kafka-python's own.

Every input goes through both: kafka-python's ``PartitionRecords`` generator
(stock) and ours with ``ragpulse_native.unpack_records``. The records must be
equal (every ConsumerRecord field), and so must the bookkeeping after
(next fetch offset, records and bytes read) or the exception raised, with its
message, and the records taken before it. Inputs: batches kafka-python's own
builders write (format v0/v1/v2, every codec installed here, null and empty
keys and values, headers), control and log-append-time batches, several
batches in one fetch, a truncated last batch, a fetch offset inside a batch,
a seeded fuzz of corrupted batches, and records fetched from a real broker.
"""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.codec import has_lz4, has_snappy, has_zstd
from kafka.record.memory_records import MemoryRecordsBuilder
from kafka.record.util import calc_crc32c
from ragpulse.collector.kafka import records as kafka_records
from ragpulse.collector.kafka.records import _unpack_all

from tests.native_module import require_native

ragpulse_native = require_native(
    "kafka-python unpacking only", disabled="RAGPULSE_NATIVE=0 keeps kafka-python's unpacking"
)

CODECS = [0, 1] + [c for c, ok in ((2, has_snappy()), (3, has_lz4()), (4, has_zstd())) if ok]
HEADER_SIZE = 61  # a v2 batch header; records (or their compressed block) follow


@pytest.fixture
def both() -> Iterator[Any]:
    """``outcome(data, **kw)`` for stock and native unpacking; leaves native installed as found."""
    was_native = kafka_records.unpacking_description().startswith("native")

    def outcome(native: bool, data: bytes, **kw: Any) -> Any:
        (kafka_records.install if native else kafka_records.uninstall)()
        assert kafka_records.unpacking_description().startswith("native") == native
        try:
            return ("ok", *_unpack_all(data, **kw))
        except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
            return ("raised", type(exc).__name__, str(exc))

    def compare(data: bytes, **kw: Any) -> Any:
        stock = outcome(False, data, **kw)
        native = outcome(True, data, **kw)
        assert native == stock
        return stock

    yield compare
    (kafka_records.install if was_native else kafka_records.uninstall)()


def batch(
    codec: int = 0,
    n: int = 5,
    offset: int = 0,
    magic: int = 2,
    headers: list[tuple[str, bytes | None]] | None = None,
    rng: random.Random | None = None,
) -> bytes:
    rng = rng or random.Random(n * 31 + codec)
    builder = MemoryRecordsBuilder(magic, codec, 1 << 22, offset=offset)
    for i in range(n):
        key = [None, b"", f"key-{i}".encode()][i % 3]
        value = [None, b"", bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 3000)))][(i + 1) % 3]
        builder.append(1_700_000_000_000 + rng.randint(0, 10**6), key, value, headers if magic == 2 else [])
    builder.close()
    return bytes(builder.buffer())


def set_attributes(data: bytes, bits: int) -> bytes:
    """A v2 batch with attribute ``bits`` set and its CRC recomputed."""
    b = bytearray(data)
    attrs = struct.unpack_from(">h", b, 21)[0] | bits
    struct.pack_into(">h", b, 21, attrs)
    struct.pack_into(">I", b, 17, calc_crc32c(memoryview(b)[21:]))
    return bytes(b)


def test_installs_natively() -> None:
    assert kafka_records.install().startswith("native"), kafka_records.unpacking_description()
    assert kafka_records.install() == kafka_records.unpacking_description()  # idempotent


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("headers", [[], [("h", b"v"), ("é-ü", None), ("", b""), ("k", b"x" * 300)]])
def test_builder_batches_are_identical(both: Any, codec: int, headers: list[Any]) -> None:
    for n in (0, 1, 7, 200):
        got = both(batch(codec, n, offset=10_000, headers=headers))
        assert got[0] == "ok" and len(got[1]) == n


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_formats_are_identical(both: Any, magic: int) -> None:
    for codec in (0, 1):
        got = both(batch(codec, 9, offset=5, magic=magic))
        assert got[0] == "ok" and len(got[1]) == 9


def test_several_batches_partial_last_and_mid_batch_fetch_offsets(both: Any) -> None:
    data = b"".join(batch(c, 6, offset=100 + 6 * k) for k, c in enumerate([0, CODECS[-1], 0, 1]))
    whole = both(data)
    assert [r.offset for r in whole[1]] == list(range(100, 124))
    assert whole[2] == 124
    for cut in (len(data) - 1, len(data) - 200, len(data) // 2, 61, 10):
        both(data[:cut])  # a fetch response may end inside a batch
    for fetch_offset in (0, 100, 103, 109, 123, 124):
        for take in (1, 2, 5, 500):
            got = both(data, fetch_offset=fetch_offset, take=take)
            assert [r.offset for r in got[1]] == list(range(max(100, fetch_offset), 124))


def test_control_and_log_append_time_batches(both: Any) -> None:
    plain = batch(0, 4, offset=0)
    control = set_attributes(batch(0, 1, offset=4), 0x20 | 0x10)
    log_append = set_attributes(batch(0, 4, offset=5), 0x08)
    got = both(plain + control + log_append)
    assert [r.offset for r in got[1]] == [0, 1, 2, 3, 5, 6, 7, 8]
    assert {r.timestamp_type for r in got[1][4:]} == {1}


def test_crc_failures_are_identical(both: Any) -> None:
    data = bytearray(batch(0, 5))
    data[HEADER_SIZE + 20] ^= 0xFF
    got = both(bytes(data))
    assert got[0] == "raised" and "crc" in got[2]
    assert both(bytes(data), check_crcs=False)[0] in ("ok", "raised")


def test_consumers_with_deserializers_keep_kafka_pythons_generator(both: Any) -> None:
    from kafka.consumer.fetcher import Fetcher
    from kafka.record import MemoryRecords
    from kafka.serializer import Deserializer
    from kafka.structs import TopicPartition

    class Tag(Deserializer):
        def deserialize(self, topic: str, headers: Any, data: bytes) -> Any:
            return ("seen", data)

    kafka_records.install()
    part = Fetcher.PartitionRecords(
        0, TopicPartition("t", 0), MemoryRecords(batch(0, 4)), value_deserializer=Tag()
    )
    records = part.take(10)
    assert len(records) == 4 and all(r.value[0] == "seen" for r in records)


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(HEADER_SIZE, len(b))
        choice = rng.random()
        if choice < 0.5:
            b[at] = rng.getrandbits(8)
        elif choice < 0.7:
            b[at] ^= 0x80  # a varint's continuation bit
        elif choice < 0.85:
            del b[at : at + rng.randint(1, 8)]
        else:
            b[at:at] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 8)))
    # Keep the batch length field in step so the batch is still found; the CRC is not checked.
    struct.pack_into(">i", b, 8, len(b) - 12)
    return bytes(b)


def test_corrupted_batches_fuzz(both: Any) -> None:
    rng = random.Random(20261129)
    outcomes = {"ok": 0, "raised": 0}
    declined = 0
    for case in range(1500):
        headers = [("h", b"v"), ("x", None)] if case % 2 else []
        data = mutate(batch(0, rng.randint(1, 6), offset=rng.randint(0, 1000), headers=headers, rng=rng), rng)
        got = both(data, check_crcs=False, take=rng.choice([1, 3, 100]))
        outcomes[got[0]] += 1
        fields = struct.unpack_from(">qiibIhiqqqhii", data)
        unpacked = ragpulse_native.unpack_records(
            data, HEADER_SIZE, fields[12], fields[0], fields[7], fields[8], 0, "t", 3, 0, lambda *a: a
        )
        declined += unpacked is None
    # Both ways of ending, and the native call's declining, were exercised.
    assert outcomes["ok"] > 100 and outcomes["raised"] > 100, outcomes
    assert 100 < declined < 1400, declined


@pytest.mark.services
def test_records_from_a_real_broker_are_identical(kafka_broker: Any) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"records-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 1)
    rng = random.Random(7)
    for codec in ["gzip", "lz4" if has_lz4() else None, None]:
        producer = KafkaProducer(
            bootstrap_servers=kafka_broker.bootstrap, compression_type=codec, linger_ms=5, batch_size=64 << 10
        )
        for i in range(600):
            headers = [("ragpulse.source", b"test"), ("n", str(i).encode())] if i % 4 == 0 else None
            value = None if i % 50 == 0 else bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 6000)))
            key = f"k{i}".encode() if i % 3 == 0 or value is None else None  # never both null
            producer.send(topic, key=key, value=value, headers=headers)
        producer.flush(60)
        producer.close()

    def read_all(native: bool) -> list[Any]:
        (kafka_records.install if native else kafka_records.uninstall)()
        consumer = KafkaConsumer(
            bootstrap_servers=kafka_broker.bootstrap,
            enable_auto_commit=False,
            max_poll_records=37,
            max_partition_fetch_bytes=256 << 10,  # fetch responses end inside batches
        )
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out: list[Any] = []
        try:
            while len(out) < 1800:
                for records in consumer.poll(timeout_ms=2000).values():
                    out.extend(records)
        finally:
            consumer.close()
        return out

    was_native = kafka_records.unpacking_description().startswith("native")
    try:
        stock, native = read_all(False), read_all(True)
    finally:
        (kafka_records.install if was_native else kafka_records.uninstall)()
    assert len(native) == 1800 and native == stock


def zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def varint(n: int) -> bytes:
    z, out = zigzag(n) & (2**64 - 1), bytearray()
    while z >= 0x80:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record(ts_delta: bytes, offset_delta: int, key_len: bytes, key: bytes, value: bytes) -> bytes:
    body = b"\x00" + ts_delta + varint(offset_delta) + key_len + key + varint(len(value)) + value + varint(0)
    return varint(len(body)) + body


def raw_batch(records: list[bytes], base_offset: int = 0, first_ts: int = 1_700_000_000_000) -> bytes:
    """A v2 batch around hand-encoded records (valid CRC)."""
    body = b"".join(records)
    head = struct.pack(">hiqqqhii", 0, len(records) - 1, first_ts, first_ts, -1, -1, -1, len(records))
    crc = calc_crc32c(memoryview(head + body))
    return struct.pack(">qiibI", base_offset, 49 + len(head) + len(body) - 40, 0, 2, crc) + head + body


def test_hand_encoded_varints(both: Any) -> None:
    ten_bytes = b"\xff" * 9 + b"\x01"  # fits 64 bits
    beyond = b"\xff" * 9 + b"\x02"  # bits past 64: kafka-python makes a bigger int
    eleven = b"\xff" * 10 + b"\x01"  # kafka-python: out of int64 range
    cases = {
        "plain": varint(5),
        "non-canonical": b"\x85\x80\x80\x00",
        "ten bytes": ten_bytes,
        "beyond 64 bits": beyond,
        "eleven bytes": eleven,
    }
    for name, ts in cases.items():
        for key_len, key in ((varint(3), b"abc"), (varint(-5), b""), (varint(-1), b"")):
            data = raw_batch(
                [record(ts, 0, key_len, key, b"v1"), record(varint(1), 1, varint(-1), b"", b"v2")]
            )
            got = both(data)
            assert got[0] == ("raised" if name == "eleven bytes" else "ok"), (name, got)
            if got[0] == "ok":
                assert got[1][0].key == (key if key else None) and got[1][1].value == b"v2"
    ok = both(raw_batch([record(beyond, 0, varint(-1), b"", b"x")]))
    assert ok[0] == "ok" and abs(ok[1][0].timestamp) > 2**63  # beyond 64 bits: kafka-python unpacked it
