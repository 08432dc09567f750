"""The native RowBinary rows store exactly what the JSON rows (the reference) store.

Both encodings of the same traces are inserted into a real chDB table and read
back whole; batches holding a value the binary rows cannot write as the JSON
rows do fall back to JSON, and nothing else does.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

import pytest
from ragpulse.collector.contract import SOURCE_RETRIEVAL, SOURCE_TOOL
from ragpulse.collector.core.model import Chunk, Citation, Message, RagTrace
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.ingest.build import build_trace
from ragpulse.collector.ingest.otlp import Limits, decode_otlp_proto
from ragpulse.collector.storage import rows
from ragpulse.collector.storage.clickhouse import Storage

from tests.native_module import require_native

ragpulse_native = require_native(
    "the rows are JSONCompactEachRow", disabled="RAGPULSE_NATIVE=0: the rows are JSONCompactEachRow"
)

S = 1_000_000_000
T0 = (int(time.time()) - 3600) * S  # recent: older rows would meet the table's TTL
TOPIC = "ragpulse.spans"
_ODD_TEXTS = [
    "",
    "plain",
    "ünïcødé ✓",
    "emoji 🦀",
    'quote " and \\ and \n',
    "lone \ud800 surrogate",
    "x" * 5000,
]


@pytest.fixture()
def storage(chdb_storage):
    return chdb_storage


def _synthetic(n: int) -> list[RagTrace]:
    """Traces as the ingest builds them from the bench's synthetic spans."""
    out = []
    for i in range(n):
        made = make_trace(
            i, seed="rows", n_chunks=5, chunk_chars=300, rerank=(i % 3 == 0), rng=random.Random(i)
        )
        spans = decode_otlp_proto(traces_data([(made.service, made.spans)]), Limits()).spans
        t = build_trace(made.hex, spans)
        t.time, t.end_time = T0 + i * S, T0 + i * S + 10**8
        t.src_partition, t.src_offset, t.sampled, t.sampled_reason = (
            i % 2,
            i,
            i % 4 == 0,
            "rate" if i % 4 else "",
        )
        out.append(t)
    return out


def _odd(i: int, rng: random.Random) -> RagTrace:
    """A trace with the values at the edges of every column kind."""
    t = RagTrace(f"{i:032x}")
    t.time, t.end_time = T0 + i, T0 + i + rng.choice([0, 1, 999_999_999])
    t.query, t.answer, t.service = rng.choice(_ODD_TEXTS), rng.choice(_ODD_TEXTS), rng.choice(_ODD_TEXTS)
    t.chunks = [
        Chunk(rng.choice(_ODD_TEXTS), rng.choice(_ODD_TEXTS), rng.choice([None, 0.0, -1.5, 1e300, math.nan, math.inf, 3]),
              rng.choice(["", "{}", '{"k": [1, 2]}']), rng.choice([None, "", "src ✓"]),
              rng.choice([SOURCE_RETRIEVAL, SOURCE_TOOL]), rng.choice(["", "get_balance"]), rng.choice(_ODD_TEXTS))
        for _ in range(rng.randrange(0, 4))
    ]  # fmt: skip
    t.conversation = [
        Message(rng.choice(["user", "assistant", ""]), rng.choice(_ODD_TEXTS))
        for _ in range(rng.randrange(0, 4))
    ]
    t.citations = [
        Citation(rng.choice(_ODD_TEXTS), "[1]", rng.choice([-1, 0, 2**31 - 1]), rng.choice([-(2**31), 5]))
        for _ in range(rng.randrange(0, 3))
    ]
    t.latency_ms = rng.choice([0.0, 12.5, 1e-300, 7])
    t.generation_cost_usd = rng.choice([None, 0.0, 1.25e-6, math.nan, -math.inf])
    t.input_tokens, t.output_tokens = rng.choice([0, 1, 2**32 - 1]), rng.choice([0, True, 17])
    t.span_count = rng.randrange(0, 50)
    t.attributes = rng.choice(
        [{}, {"k": 1}, {"nested": {"a": [1, "ü"]}, "n": None}, {"bad": "\udc80"}, {"big": 2**70}]
    )
    t.complete, t.sampled = rng.choice([True, False, 0, 1]), rng.choice([True, False])
    t.src_partition, t.src_offset = rng.choice([-1, 0, 2**31 - 1]), rng.choice([-1, 0, 2**63 - 1])
    return t


def _stored(storage: Storage, encoded: rows.EncodedRows) -> list[tuple[Any, ...]]:
    """Insert ``encoded`` into an empty rag_traces and read every row back, then empty it."""
    storage.insert_encoded_traces(encoded)
    got = storage.query("SELECT * EXCEPT ingested_at FROM ragpulse.rag_traces ORDER BY trace_id")
    storage.command("TRUNCATE TABLE ragpulse.rag_traces")
    return [tuple(_comparable(v) for v in row) for row in got]


def _comparable(value: Any) -> Any:
    """NaN equal to itself, lists as tuples, for comparing whole rows."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, list):
        return tuple(_comparable(v) for v in value)
    return value


def _json(traces: list[RagTrace]) -> rows.EncodedRows:
    return rows.EncodedRows(b"".join(rows.encode_rows_json(traces, TOPIC)), rows.JSON_ROWS)


def _binary(traces: list[RagTrace]) -> rows.EncodedRows:
    """The native rows alone, as the boundary holds them (no fallback)."""
    return rows._encoder().native(traces, TOPIC)


def test_the_ingest_s_traces_are_encoded_in_row_binary_and_store_what_the_json_rows_store(storage) -> None:
    traces = _synthetic(60)
    encoded = rows.encode_traces(traces, TOPIC)
    assert encoded.fmt == rows.ROW_BINARY
    expected = _stored(storage, _json(traces))
    assert len(expected) == 60 and _stored(storage, encoded) == expected
    assert encoded == _binary(traces) and rows._encoder().reference(traces, TOPIC) == _json(traces)


@pytest.mark.parametrize("seed", range(6))
def test_values_at_the_edges_store_the_same_either_way(storage, seed: int) -> None:
    rng = random.Random(seed)
    traces = [_odd(i, rng) for i in range(40)]
    encoded = rows.encode_traces(traces, TOPIC)
    assert encoded.fmt == rows.ROW_BINARY  # every value _odd makes has a binary form
    assert _stored(storage, encoded) == _stored(storage, _json(traces))


@pytest.mark.parametrize(
    "field, value",
    [("latency_ms", math.nan), ("retrieval_ms", math.inf), ("input_tokens", 2**32), ("span_count", -1),
     ("src_offset", 2**63), ("query", None), ("time", -5), ("input_tokens", 1.5)],
)  # fmt: skip
def test_a_batch_with_a_value_without_a_binary_form_falls_back_to_json_rows(
    storage, field: str, value: Any
) -> None:
    traces = _synthetic(3)
    setattr(traces[1], field, value)
    with pytest.raises((TypeError, ValueError, OverflowError)):
        _binary(traces)
    encoded = rows.encode_traces(traces, TOPIC)
    assert encoded.fmt == rows.JSON_ROWS
    assert encoded == _json(traces)


def test_the_binary_spec_follows_the_contract_and_a_wrong_one_is_refused() -> None:
    from ragpulse.collector.contract import COLUMNS

    assert len(rows.BINARY_SPEC) == len(COLUMNS)
    bad = ((("no_such_kind", "query", ""),), (("array_string", "chunks", ""),))
    for spec in bad:
        with pytest.raises(ValueError):
            ragpulse_native.encode_rows([], spec, TOPIC, rows.json_bytes)
    assert ragpulse_native.encode_rows([], rows.BINARY_SPEC, TOPIC, rows.json_bytes) == b""
