"""The collector's internal data model: decoded spans and assembled RAG traces.

Spans from every input path (OTLP protobuf or JSON from Kafka, OTLP/HTTP, the
agent's in-process sink) are converted to :class:`Span` once, so assembly,
sampling and storage never care where a span came from. Every class uses
``__slots__`` because the collector handles tens of thousands of spans per
second and per-object overhead is most of its Python cost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..contract import JSON, SOURCE_RETRIEVAL, SOURCE_TOOL, TRACE_FIELDS

__all__ = [
    "Span",
    "Chunk",
    "Citation",
    "Message",
    "RagTrace",
    "STATUS_ERROR",
    "JUDGE_ROLES",
    "judge_conversation",
]

STATUS_ERROR = 2  # OTLP Status.code for ERROR


@dataclass(slots=True, eq=False, repr=False)
class Span:
    """One finished span, reduced to what the collector reads.

    ``attrs`` maps attribute keys to plain Python values (str, int, float, bool,
    lists of those); ``events`` is a list of ``(name, time_unix_nano, attrs)``.
    Compared by identity: two spans are never merged by their contents.
    """

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: int
    end: int
    status: int
    service: str
    attrs: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]]
    role: str | None = field(default=None, init=False)  # RAG role, worked out once (build.span_role)

    def __repr__(self) -> str:
        return f"Span({self.trace_id[:8]}/{self.span_id} {self.name!r})"


class Chunk:
    """A piece of evidence: a retrieved (or reranked) chunk, or a tool call's result.

    ``metadata`` stays the JSON text the span carried. ``source`` is the id the retriever gave;
    ``id`` equals it unless that id repeated within the retrieval (then ``id`` is made unique,
    ``agent/chunks.unique_ids``). ``source_type`` says where the chunk came from
    (:data:`~..contract.SOURCE_RETRIEVAL` or :data:`~..contract.SOURCE_TOOL`); ``query`` is
    the query of the retrieval that fetched it (a tool call's arguments), ``tool`` the tool's
    name ('' for a retrieval).
    """

    __slots__ = ("id", "content", "score", "metadata", "source", "source_type", "tool", "query")

    def __init__(
        self,
        id: str,
        content: str,
        score: float | None,
        metadata: str,
        source: str | None = None,
        source_type: str = SOURCE_RETRIEVAL,
        tool: str = "",
        query: str = "",
    ) -> None:
        self.id = id
        self.content = content
        self.score = score
        self.metadata = metadata
        self.source = id if source is None else source
        self.source_type = source_type
        self.tool = tool
        self.query = query

    def as_record(self) -> dict[str, Any]:
        """The chunk as the judge input has it (DESIGN.md "The judge"): where it came from
        beside its text, ``tool`` only for a tool's result, ``query`` only when known."""
        try:
            meta = json.loads(self.metadata) if self.metadata else {}
        except ValueError:
            meta = {"raw": self.metadata}
        if not isinstance(meta, dict):
            meta = {"value": meta}
        out = {
            "id": self.id,
            "content": self.content,
            "score": self.score,
            "metadata": meta,
            "source_type": self.source_type,
        }
        if self.source_type == SOURCE_TOOL:
            out["tool"] = self.tool
        if self.query:
            out["query"] = self.query
        return out


class Citation:
    """One ``rag.citation`` event of the root span."""

    __slots__ = ("doc_id", "marker", "start", "end")

    def __init__(self, doc_id: str, marker: str, start: int, end: int) -> None:
        self.doc_id = doc_id
        self.marker = marker
        self.start = start
        self.end = end

    def as_record(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "marker": self.marker, "start": self.start, "end": self.end}


class Message:
    """One message of the conversation before the user's turn: its role (``user``,
    ``assistant``, ``system``, ``tool``) and its text."""

    __slots__ = ("role", "content")

    def __init__(self, role: str, content: str) -> None:
        self.role = role
        self.content = content

    def as_record(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


class RagTrace:
    """One assembled RAG call: what ``rag_traces`` stores and the judge reads.

    Its fields are the scalar columns of the contract (:data:`~..contract.TRACE_FIELDS`);
    ``chunks`` (every piece of evidence: each retrieval's chunks, then tool results),
    ``citations`` and ``conversation`` (the messages before the user's turn, oldest first)
    fill the array columns. ``RagTrace(trace_id)`` sets every
    field to the contract's default (``__init__`` is made from it below).
    """

    __slots__ = (*(c.name for c in TRACE_FIELDS), "chunks", "citations", "conversation")

    @property
    def chunk_count(self) -> int:
        """How many chunks the trace has."""
        return len(self.chunks)

    @property
    def top_score(self) -> float | None:
        """The highest retrieval score, or None when no chunk carries a score."""
        best = None
        for c in self.chunks:
            if c.score is not None and (best is None or c.score > best):
                best = c.score
        return best

    def judge_message(self) -> dict[str, Any]:
        """The ``ragpulse.judge`` message (docs/contracts.md): a superset of the judge input record."""
        return {
            "trace_id": self.trace_id,
            "root_span_id": self.root_span_id,
            "service": self.service,
            "variant": self.variant,
            "time_unix_nano": self.time,
            "end_time_unix_nano": self.end_time,
            "query": self.query,
            "answer": self.answer,
            "chunks": [c.as_record() for c in self.chunks],
            "citations": [c.as_record() for c in self.citations],
            "conversation": judge_conversation(self.conversation),
            "model": self.model,
            "corpus_version": self.corpus_version,
            "risk_level": self.risk_level,
            "sampled_reason": self.sampled_reason,
            "span_count": self.span_count,
            "attributes": self.attributes,
        }


# The roles of the judge input's conversation: a system prompt or a tool message is not a turn.
JUDGE_ROLES = ("user", "assistant")


def judge_conversation(messages: list[Message]) -> list[dict[str, str]]:
    """The judge input's ``conversation``: the user and assistant turns with text, oldest first."""
    return [m.as_record() for m in messages if m.role in JUDGE_ROLES and m.content]


def _init_source() -> str:
    """The source of ``RagTrace.__init__``: one assignment per field of the contract (made once
    at import, as dataclasses makes its methods; a loop of setattr calls costs several times
    as many instructions, once per trace)."""
    lines = ["def __init__(self, trace_id):"]
    for c in TRACE_FIELDS:
        value = "trace_id" if c.name == "trace_id" else "{}" if c.kind == JSON else repr(c.default)
        lines.append(f"    self.{c.name} = {value}")
    lines += ["    self.chunks = []", "    self.citations = []", "    self.conversation = []"]
    return "\n".join(lines) + "\n"


_namespace: dict[str, Any] = {}
exec(_init_source(), _namespace)  # noqa: S102 - source made above from the contract, no input
_namespace["__init__"].__qualname__ = "RagTrace.__init__"
RagTrace.__init__ = _namespace["__init__"]  # type: ignore[method-assign]
