"""What the collector's stages share: the trace's columns, the score names, the Judge protocol.

One definition each, from which the rest follows:

* :data:`COLUMNS`, the ``rag_traces`` columns the collector writes, in the
  order of an encoded row. :class:`~.core.model.RagTrace` takes its fields
  and their defaults from them, ``storage/clickhouse.py`` builds its row
  encoder from them, and ``tests/test_contract.py`` checks
  ``storage/sql/schema.sql`` against them.
* :data:`SCORE_NAMES`, the six per-trace scores of a judgment (judge output
  keys, ``rag_judgments`` columns, metrics, the report).
* :data:`CLAIM_VERDICTS`, :data:`FAILURE_MODES`, :data:`ABSTENTION_KINDS`: the values a
  judgment's claims, failure mode and abstention take (judge output, stored columns, metric
  labels, the labels a reviewer gives, the rejudge diff).
* :data:`RANDOM_SLICE`, the review label ``slice`` of the judgments queue's random sample,
  which the review writes and judge calibration selects on.
* :class:`Judge`, what a judge is to the collector and the CLI.

The span attribute keys the agent writes and assembly reads are the agent's
side of the wire: ``agent/conventions.py`` (the agent imports nothing from
the collector).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

__all__ = [
    "Column",
    "COLUMNS",
    "SOURCE_RETRIEVAL",
    "SOURCE_TOOL",
    "TRACE_COLUMNS",
    "TRACE_FIELDS",
    "SERVER_COLUMNS",
    "SCORE_NAMES",
    "CLAIM_VERDICTS",
    "FAILURE_MODES",
    "ABSTENTION_KINDS",
    "RANDOM_SLICE",
    "Judge",
]

# How a value becomes its JSON value in an encoded row (JSONCompactEachRow).
TEXT = "text"  # a str attribute
INT = "int"
FLOAT = "float"
TIME = "time"  # integer nanoseconds since the epoch, written as "<seconds>.<9 digits>"
JSON = "json"  # a dict, written as its JSON text ("{}" when empty)
FLAG = "flag"  # a bool, written as 0 or 1
CHUNKS = "chunks"  # one attribute of every Chunk of RagTrace.chunks, as an array
CITATIONS = "citations"  # one attribute of every Citation of RagTrace.citations, as an array
MESSAGES = "messages"  # one attribute of every Message of RagTrace.conversation, as an array
TOPIC = "topic"  # not a trace field: the Kafka topic the encoder is given

_ARRAYS = (CHUNKS, CITATIONS, MESSAGES)


class Column(NamedTuple):
    """One ``rag_traces`` column the collector writes."""

    name: str  # the column, and the RagTrace attribute for a scalar
    type: str  # its ClickHouse type, as schema.sql writes it
    kind: str  # how the row encoder writes it (the constants above)
    default: Any = None  # RagTrace's value before assembly sets it (scalars)
    item: str = ""  # for CHUNKS / CITATIONS / MESSAGES: the attribute of each Chunk / Citation / Message


# A chunk's source_type: evidence a retrieval fetched, or the result of a tool call.
SOURCE_RETRIEVAL = "retrieval"
SOURCE_TOOL = "tool"

_STR = "String"
_LC = "LowCardinality(String)"
_TIME = "DateTime64(9, 'UTC')"

COLUMNS: tuple[Column, ...] = (
    Column("trace_id", _STR, TEXT, ""),
    Column("root_span_id", _STR, TEXT, ""),  # hex; what judgments are parented to (evaluation events)
    Column("time", _TIME, TIME, 0),
    Column("end_time", _TIME, TIME, 0),
    Column("service", _LC, TEXT, ""),
    Column("route", _LC, TEXT, ""),
    Column("query", _STR, TEXT, ""),
    Column("answer", _STR, TEXT, ""),
    # The conversation before the user's turn (oldest first): one role and one text per message.
    Column("conversation_roles", "Array(LowCardinality(String))", MESSAGES, item="role"),
    Column("conversation_contents", "Array(String)", MESSAGES, item="content"),
    Column("chunk_ids", "Array(String)", CHUNKS, item="id"),
    Column("chunk_contents", "Array(String)", CHUNKS, item="content"),
    Column("chunk_scores", "Array(Nullable(Float64))", CHUNKS, item="score"),
    Column("chunk_metadata", "Array(String)", CHUNKS, item="metadata"),
    Column("chunk_sources", "Array(String)", CHUNKS, item="source"),
    # Where each chunk came from: a retrieval (its own query) or a tool call (its name, arguments).
    Column("chunk_source_types", "Array(LowCardinality(String))", CHUNKS, item="source_type"),
    Column("chunk_tools", "Array(String)", CHUNKS, item="tool"),
    Column("chunk_queries", "Array(String)", CHUNKS, item="query"),
    Column("citation_doc_ids", "Array(String)", CITATIONS, item="doc_id"),
    Column("citation_markers", "Array(String)", CITATIONS, item="marker"),
    Column("citation_starts", "Array(Int32)", CITATIONS, item="start"),
    Column("citation_ends", "Array(Int32)", CITATIONS, item="end"),
    Column("corpus_version", _LC, TEXT, ""),
    Column("model", _LC, TEXT, ""),
    Column("provider", _LC, TEXT, ""),
    Column("latency_ms", "Float64", FLOAT, 0.0),
    Column("retrieval_ms", "Float64", FLOAT, 0.0),
    Column("rerank_ms", "Float64", FLOAT, 0.0),
    Column("generation_ms", "Float64", FLOAT, 0.0),
    Column("input_tokens", "UInt32", INT, 0),
    Column("output_tokens", "UInt32", INT, 0),
    # The model's price x its tokens (ingest/cost.py); NULL when the model has no price.
    Column("generation_cost_usd", "Nullable(Float64)", FLOAT, None),
    Column("risk_level", _LC, TEXT, ""),
    Column("query_type", _LC, TEXT, ""),
    Column("variant", _LC, TEXT, ""),  # rag.variant: the configuration that served the call
    Column("session_id", _STR, TEXT, ""),
    Column("user_id", _STR, TEXT, ""),
    Column("status", _LC, TEXT, "ok"),
    Column("source", _LC, TEXT, "ragpulse"),
    Column("span_count", "UInt32", INT, 0),
    Column("attributes", _STR, JSON),
    # Decided after assembly: completeness, sampling, the Kafka position (-1: not from Kafka).
    Column("src_topic", _LC, TOPIC),
    Column("complete", "UInt8", FLAG, False),
    Column("sampled", "UInt8", FLAG, False),
    Column("sampled_reason", _LC, TEXT, ""),
    Column("src_partition", "Int32", INT, -1),
    Column("src_offset", "Int64", INT, -1),
)

TRACE_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS)

# The RagTrace attributes the columns name (all but the arrays and the topic), in row order.
TRACE_FIELDS: tuple[Column, ...] = tuple(c for c in COLUMNS if c.kind not in (*_ARRAYS, TOPIC))

# rag_traces columns ClickHouse fills itself (a DEFAULT in schema.sql).
SERVER_COLUMNS: tuple[str, ...] = ("ingested_at",)

SCORE_NAMES: tuple[str, ...] = (
    "faithfulness",
    "citation_correctness",
    "citation_completeness",
    "answer_relevance",
    "context_precision",
    "context_utilization",
)

#: A claim's verdict: ``claims[].verdict`` of a judgment, ``rag_claims.verdict``, and the label a
#: reviewer gives a claim (so judge and human agree or not on the same values).
CLAIM_VERDICTS: tuple[str, ...] = ("supported", "unsupported", "contradicted")

#: A judged trace's failure mode: ``rag_judgments.failure_mode``, ``ragpulse_failure_modes_total{mode}``.
FAILURE_MODES: tuple[str, ...] = ("retrieval", "generation", "both", "abstain", "healthy")

#: What an abstention was: ``rag_judgments.abstention_kind``, ``ragpulse_abstentions_total{kind}``.
ABSTENTION_KINDS: tuple[str, ...] = ("appropriate", "false_refusal")

#: The ``slice`` (``rag_reviews``, the labels file ``ragpulse calibrate`` reads) of a label given
#: in the review queue's random slice: a random sample of the judged traces, the only labels
#: calibration's prediction-powered interval takes when labels record their slice.
RANDOM_SLICE = "random"


class Judge(Protocol):
    """A judge: ``judge(record)`` returns the output record of docs/contracts.md (the
    :data:`SCORE_NAMES` among its keys) and never raises for a bad judgment."""

    judge_id: str

    def judge(self, record: dict[str, Any]) -> dict[str, Any]: ...
