"""The one contract (collector/contract.py, agent/conventions.py) and every copy that follows it.

Each test fails when a copy drifts: the table in schema.sql, the trace model,
the row encoder, the judgment columns, the score names and the span keys that
the agent, assembly and the synthetic traces spell, and the native decoder.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import pytest
from ragpulse.agent import conventions
from ragpulse.collector import contract
from ragpulse.collector.core.model import Chunk, Citation, Message, RagTrace
from ragpulse.collector.storage import clickhouse, rows

ROOT = Path(__file__).resolve().parents[1]


def table_columns(table: str) -> dict[str, str]:
    """{column: type} of ``table`` in storage/sql/schema.sql, in order."""
    ddl = next(s for s in clickhouse.schema_statements() if f".{table}" in s.split("(", 1)[0])
    lines = [line.strip() for line in ddl.splitlines()]
    body = lines[lines.index("(") + 1 : lines.index(")")]  # the column list, one per line
    out = {}
    for line in body:
        if not line or line.startswith("INDEX"):
            continue
        name, spec = line.rstrip(",").split(None, 1)
        out[name] = spec.split(" DEFAULT ")[0].strip()
    return out


def test_schema_has_exactly_the_contract_columns_with_their_types() -> None:
    table = table_columns("rag_traces")
    ours = {c.name: c.type for c in contract.COLUMNS}
    assert len(ours) == len(contract.TRACE_COLUMNS)  # no column named twice
    assert set(table) == set(ours) | set(contract.SERVER_COLUMNS)
    assert {k: table[k] for k in ours} == ours


def test_trace_model_has_the_contract_fields_and_defaults() -> None:
    t = RagTrace("abc")
    for c in contract.TRACE_FIELDS:
        assert c.name in RagTrace.__slots__
        want = "abc" if c.name == "trace_id" else ({} if c.kind == contract.JSON else c.default)
        assert getattr(t, c.name) == want and type(getattr(t, c.name)) is type(want), c
    assert RagTrace("x").attributes is not RagTrace("y").attributes
    assert {c.item for c in contract.COLUMNS if c.kind == contract.CHUNKS} == set(Chunk.__slots__)
    assert {c.item for c in contract.COLUMNS if c.kind == contract.CITATIONS} == set(Citation.__slots__)
    assert {c.item for c in contract.COLUMNS if c.kind == contract.MESSAGES} == set(Message.__slots__)
    assert RagTrace("x").conversation == [] and RagTrace("x").conversation is not RagTrace("y").conversation


def test_encoded_row_has_one_value_per_column_in_contract_order() -> None:
    t = RagTrace("0af7651916cd43dd8448eb211c80319c")
    t.time, t.end_time, t.query, t.attributes = (
        1_700_000_000_123_456_789,
        1_700_000_001_000_000_000,
        "q",
        {"k": 1},
    )
    t.chunks = [Chunk("c1", "text", 0.5, "{}"), Chunk("c2", "more", None, "")]
    t.citations = [Citation("c1", "[1]", 0, 3)]
    t.sampled, t.sampled_reason, t.src_partition, t.src_offset = True, "rate", 1, 42
    (row,) = rows.encode_rows_json([t], "ragpulse.spans")
    values = dict(zip(contract.TRACE_COLUMNS, json.loads(row), strict=True))
    assert values["trace_id"] == t.trace_id and values["time"] == "1700000000.123456789"
    assert values["chunk_ids"] == ["c1", "c2"] and values["chunk_scores"] == [0.5, None]
    assert values["citation_starts"] == [0] and values["citation_markers"] == ["[1]"]
    assert values["attributes"] == '{"k":1}' and values["status"] == "ok"
    assert values["src_topic"] == "ragpulse.spans" and values["sampled"] == 1 and values["complete"] == 0
    assert values["sampled_reason"] == "rate" and (values["src_partition"], values["src_offset"]) == (1, 42)
    assert row.endswith(b"]\n")


def test_score_names_are_the_judgment_columns_and_every_copy_is_the_contract() -> None:
    from ragpulse.collector.judge import calibrate, record

    table = table_columns("rag_judgments")
    for name in contract.SCORE_NAMES:
        assert table[name] == "Nullable(Float64)" and name in clickhouse.JUDGMENT_COLUMNS
    assert set(clickhouse.JUDGMENT_COLUMNS) <= set(table)
    assert record.SCORE_KEYS is contract.SCORE_NAMES and calibrate.NUMERIC is contract.SCORE_NAMES


def test_the_judge_protocol_is_defined_once() -> None:
    from ragpulse.collector import judge
    from ragpulse.collector.judge.service import worker

    assert judge.Judge is contract.Judge and worker.Judge is contract.Judge
    local = judge.get_judge("local")
    assert isinstance(local.judge_id, str) and callable(local.judge)


# -- span keys: spelled only in agent/conventions.py -------------------------------------------

_KEYS = {
    v: name for name in conventions.__all__ if isinstance(v := getattr(conventions, name), str) and "." in v
}
# The modules that write or read spans. The judge reads judge records (docs/contracts.md), not spans.
_SPAN_CODE = sorted(
    p
    for p in [*ROOT.joinpath("agent").rglob("*.py"), *ROOT.joinpath("collector").rglob("*.py")]
    if p.name != "conventions.py" and "judge" not in p.parts
)


@pytest.mark.parametrize("path", _SPAN_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_span_key_is_spelled_outside_the_conventions(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
    }
    spelled = [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value in _KEYS
        and id(n) not in docstrings
    ]
    assert not spelled, f"use ragpulse.agent.conventions names instead of {spelled}"


def test_native_code_stops_at_decoding() -> None:
    """The native module decodes OTLP into spans and reads no convention but the resource's
    ``service.name`` (OpenTelemetry's): assembly, building and encoding are Python only."""
    literals: set[str] = set()
    for path in ROOT.joinpath("native", "src").glob("*.rs"):
        literals |= set(re.findall(r'"([^"\\]*)"', path.read_text(encoding="utf-8")))
    assert literals & set(_KEYS) == {conventions.SERVICE_NAME}


def test_json_rows_write_a_non_finite_float_as_null_whichever_encoder_writes_them() -> None:
    # orjson writes NaN as null; the stdlib fallback (taken for a lone surrogate) must too.
    assert rows.json_bytes([math.nan, "a"]) == b'[null,"a"]'
    assert rows.json_bytes([math.nan, {"x": [math.inf]}, "\ud800"]) == b'[null, {"x": [null]}, "?"]'
