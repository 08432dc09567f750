"""``rag_traces`` rows as the insert's input: RowBinary from the native module, else JSON.

:func:`encode_traces` turns a batch of :class:`~..core.model.RagTrace` into one
block of rows in the contract's column order (:data:`~..contract.COLUMNS`) and
says its format:

* **RowBinary**, written by ``ragpulse_native.encode_rows`` (native/src/rows.rs)
  when the native module is in use: measured on the ingest bench's traces, a
  third of the Python CPU of the JSON rows and a quarter less of ClickHouse's
  CPU to parse them;
* **JSONCompactEachRow**, written here with orjson (:func:`encode_rows_json`):
  the reference, and what a batch falls back to when the native module is not
  in use or a value in it has no plain binary form that stores what the JSON
  rows store (a non-finite float in a non-nullable column, an integer out of
  its column's range, a value of an unexpected type). Both store the same rows
  (tests/test_rows_native.py).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import orjson

from ..contract import CHUNKS, CITATIONS, COLUMNS, FLAG, FLOAT, INT, JSON, MESSAGES, TEXT, TIME, TOPIC, Column
from ..core.model import RagTrace

__all__ = ["EncodedRows", "JSON_ROWS", "ROW_BINARY", "encode_traces", "encode_rows_json", "json_bytes"]

ROW_BINARY = "RowBinary"
JSON_ROWS = "JSONCompactEachRow"


class EncodedRows(NamedTuple):
    """A batch's ``rag_traces`` rows, joined, and the ClickHouse input format they are in."""

    block: bytes
    fmt: str


def json_bytes(value: Any, line: bool = False) -> bytes:
    """JSON bytes (with a trailing newline when ``line``). What orjson refuses (integers
    beyond 64 bits, lone surrogates that JSON input can carry) goes through the stdlib
    encoder, with lone surrogates replaced by '?': ClickHouse rejects them, and one odd
    value must not fail a whole batch. Either way a non-finite float is null, as orjson
    writes it (the stdlib would write NaN, which ClickHouse stores as NaN)."""
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_APPEND_NEWLINE if line else None)
    except TypeError:
        text = json.dumps(_finite(value), default=str, ensure_ascii=False) + ("\n" if line else "")
        return text.encode("utf-8", "replace")


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float in it (in lists, tuples and dict values) as None."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def nanos_text(ns: int) -> str:
    """Integer nanoseconds since the epoch as DateTime64(9) text, "<seconds>.<9 digits>"."""
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


# -- the native RowBinary rows

# The kind names native/src/rows.rs reads, per contract kind and then ClickHouse type.
_BINARY_KINDS: dict[str, dict[str, str]] = {
    TEXT: {"String": "string", "LowCardinality(String)": "string"},
    TIME: {"DateTime64(9, 'UTC')": "time_ns"},
    FLOAT: {"Float64": "float64", "Nullable(Float64)": "nullable_float64"},
    INT: {"UInt32": "uint32", "Int32": "int32", "Int64": "int64"},
    FLAG: {"UInt8": "flag"},
    JSON: {"String": "json"},
    TOPIC: {"LowCardinality(String)": "topic"},
    # RowBinary writes an array of LowCardinality as its item type
    CHUNKS: {
        "Array(String)": "array_string",
        "Array(LowCardinality(String))": "array_string",
        "Array(Nullable(Float64))": "array_nullable_float64",
    },
    CITATIONS: {"Array(String)": "array_string", "Array(Int32)": "array_int32"},
    MESSAGES: {"Array(String)": "array_string", "Array(LowCardinality(String))": "array_string"},
}
_ARRAY_ATTRIBUTE = {CHUNKS: "chunks", CITATIONS: "citations", MESSAGES: "conversation"}


def _binary_spec(columns: Sequence[Column]) -> tuple[tuple[str, str, str], ...]:
    """Per column, (kind, trace attribute, item attribute) for ``ragpulse_native.encode_rows``."""
    spec = []
    for c in columns:
        kind = _BINARY_KINDS.get(c.kind, {}).get(c.type)
        if kind is None:
            raise ValueError(f"no binary row encoding for column {c}")
        spec.append((kind, _ARRAY_ATTRIBUTE.get(c.kind, c.name), c.item))
    return tuple(spec)


BINARY_SPEC = _binary_spec(COLUMNS)


@functools.cache
def _encoder() -> Callable[[Sequence[RagTrace], str], EncodedRows]:
    """The rows' entry point: ``ragpulse_native.encode_rows`` when the native module is in use,
    a failure (a value without a binary form storing what the JSON rows store, a panic)
    answered by the JSON rows (collector/core/native.py); made on first use: storage is
    imported by commands that never encode a row."""
    from ..core.native import native_function, with_fallback

    native = native_function("encode_rows")

    def encode_binary(traces: Sequence[RagTrace], src_topic: str) -> EncodedRows:
        return EncodedRows(native(traces, BINARY_SPEC, src_topic, json_bytes), ROW_BINARY)

    return with_fallback("encode_rows", encode_binary if native is not None else None, _encode_json)


def encode_traces(traces: Sequence[RagTrace], src_topic: str = "") -> EncodedRows:
    """The ``rag_traces`` rows of ``traces`` (see the module docstring for the format).

    Encode on the caller's thread and hand the block to another for the insert
    (:meth:`~.clickhouse.Storage.insert_encoded_traces`).
    """
    return _encoder()(traces, src_topic)


def _encode_json(traces: Sequence[RagTrace], src_topic: str) -> EncodedRows:
    """The JSON rows of ``traces``, joined: the reference encoding."""
    return EncodedRows(b"".join(encode_rows_json(traces, src_topic)), JSON_ROWS)


# -- the JSON rows (the reference)


def encode_rows_json(traces: Sequence[RagTrace], src_topic: str = "") -> list[bytes]:
    """``rag_traces`` rows, each a JSONCompactEachRow line of the contract's columns in their order.

    orjson encodes them: measured about 3x cheaper in Python CPU than
    clickhouse-connect's Native serialization for these wide rows with string
    arrays, and 5x cheaper than the stdlib encoder. A non-finite float is
    written as null (NULL in a nullable column, 0 in another).
    """
    encode = _encode_row
    return [encode(t, src_topic) for t in traces]


# Per contract kind, the expression that reads a column's value in ``_encode_row`` (``t`` the
# trace; ``name`` the column's attribute, ``item`` the attribute of an array column's items).
_ROW_EXPRESSIONS: dict[str, str] = {
    TOPIC: "topic",
    CHUNKS: "[x.{item} for x in chunks]",
    CITATIONS: "[x.{item} for x in citations]",
    MESSAGES: "[x.{item} for x in t.conversation]",
    TIME: "nanos_text(t.{name})",
    JSON: '(json_bytes(t.{name}).decode() if t.{name} else "{{}}")',
    FLAG: "(1 if t.{name} else 0)",
    TEXT: "t.{name}",
    INT: "t.{name}",
    FLOAT: "t.{name}",
}


def _row_source() -> str:
    """The source of ``_encode_row``: one expression per column of the contract, in order (made
    once at import, as dataclasses makes its methods: a loop over readers would cost twice
    the instructions of this straight-line code)."""
    exprs = []
    for c in COLUMNS:
        expression = _ROW_EXPRESSIONS.get(c.kind)
        if expression is None:
            raise ValueError(f"no row encoding for column {c}")
        exprs.append(expression.format(name=c.name, item=c.item))
    values = ",\n        ".join(exprs)
    return (
        "def _encode_row(t, topic):\n"
        "    chunks = t.chunks\n"
        "    citations = t.citations\n"
        f"    return json_bytes([\n        {values},\n    ], line=True)\n"
    )


_namespace: dict[str, Any] = {"json_bytes": json_bytes, "nanos_text": nanos_text}
exec(_row_source(), _namespace)  # noqa: S102 - source made above from the contract, no input
_encode_row: Callable[[RagTrace, str], bytes] = _namespace["_encode_row"]
