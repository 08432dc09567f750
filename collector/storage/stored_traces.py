"""Stored ``rag_traces`` rows read back as :class:`~..core.model.RagTrace` objects.

A command that judges stored traces again (``ragpulse rejudge``) must hand the judge
exactly what the collector handed it when the trace arrived: ``RagTrace.judge_message()``.
Reading the row back into a ``RagTrace`` keeps that one definition; the query and the
conversion follow the contract's columns (:data:`~..contract.COLUMNS`), so a column the
contract gains is read back without a change here, and ``tests/test_rejudge.py`` checks that
a trace survives the round trip through storage whole.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..contract import CHUNKS, CITATIONS, COLUMNS, FLAG, FLOAT, INT, JSON, MESSAGES, TEXT, TIME, TOPIC, Column
from ..core.model import Chunk, Citation, Message, RagTrace
from .clickhouse import Storage

__all__ = ["UNREADABLE", "read_traces"]

#: array kind -> (the RagTrace list attribute, the class of its items)
_ITEMS: dict[str, tuple[str, type]] = {
    CHUNKS: ("chunks", Chunk),
    CITATIONS: ("citations", Citation),
    MESSAGES: ("conversation", Message),
}
_SCALARS = (TEXT, INT, FLOAT, TIME, JSON, FLAG)
_READ = tuple(c for c in COLUMNS if c.kind != TOPIC)
#: columns of a kind this module cannot read back (none while it follows the contract)
UNREADABLE = tuple(c.name for c in _READ if c.kind not in _ITEMS and c.kind not in _SCALARS)
_BATCH = 2000  # trace ids per query


def _select(c: Column) -> str:
    return f"toUnixTimestamp64Nano({c.name})" if c.kind == TIME else c.name


_SQL = (
    "SELECT " + ", ".join(_select(c) for c in _READ) + " FROM {db}.rag_traces FINAL "
    "WHERE trace_id IN %(ids)s ORDER BY trace_id"
)


def _scalar(c: Column, value: Any) -> Any:
    if c.kind == JSON:
        try:
            parsed = json.loads(value) if value else {}
        except ValueError:
            return {"raw": value}
        return parsed if isinstance(parsed, dict) else {"value": parsed}
    if c.kind == FLAG:
        return bool(value)
    if c.kind in (INT, TIME):
        return int(value)
    if c.kind == FLOAT:
        return None if value is None else float(value)
    return value


def _trace(row: Sequence[Any]) -> RagTrace:
    trace = RagTrace(str(row[0]))
    arrays: dict[str, dict[str, list[Any]]] = {}
    for c, value in zip(_READ, row, strict=True):
        if c.kind in _ITEMS:
            arrays.setdefault(c.kind, {})[c.item] = list(value)
        else:
            setattr(trace, c.name, _scalar(c, value))
    for kind, fields in arrays.items():
        attribute, cls = _ITEMS[kind]
        n = min(len(v) for v in fields.values())
        setattr(trace, attribute, [cls(**{k: v[i] for k, v in fields.items()}) for i in range(n)])
    return trace


def read_traces(storage: Storage, trace_ids: Sequence[str]) -> dict[str, RagTrace]:
    """trace id -> the stored trace, for the ids still stored (a trace past its TTL is absent)."""
    if UNREADABLE:
        raise ValueError(f"no way to read back the rag_traces column(s) {', '.join(UNREADABLE)}")
    ids = list(trace_ids)
    out: dict[str, RagTrace] = {}
    for i in range(0, len(ids), _BATCH):
        for row in storage.query(_SQL, {"ids": ids[i : i + _BATCH]}):
            trace = _trace(row)
            out[trace.trace_id] = trace
    return out
