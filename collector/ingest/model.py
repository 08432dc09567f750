"""The collector's internal data model: decoded spans and assembled RAG traces.

Spans from every input path (OTLP protobuf or JSON from Kafka, OTLP/HTTP, the
agent's in-process sink) are converted to :class:`Span` once, so assembly,
sampling and storage never care where a span came from. Both classes use
``__slots__`` because the collector handles tens of thousands of spans per
second and per-object overhead is most of its Python cost.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Span", "Chunk", "Citation", "RagTrace", "STATUS_ERROR"]

STATUS_ERROR = 2  # OTLP Status.code for ERROR


class Span:
    """One finished span, reduced to what the collector reads.

    ``attrs`` maps attribute keys to plain Python values (str, int, float, bool,
    lists of those); ``events`` is a list of ``(name, time_unix_nano, attrs)``.
    """

    __slots__ = (
        "trace_id",
        "span_id",
        "parent_id",
        "name",
        "start",
        "end",
        "status",
        "service",
        "attrs",
        "events",
        "role",
    )

    def __init__(
        self,
        trace_id: str,
        span_id: str,
        parent_id: str,
        name: str,
        start: int,
        end: int,
        status: int,
        service: str,
        attrs: dict[str, Any],
        events: list[tuple[str, int, dict[str, Any]]],
    ) -> None:
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_id = parent_id
        self.name = name
        self.start = start
        self.end = end
        self.status = status
        self.service = service
        self.attrs = attrs
        self.events = events
        self.role: str | None = None  # RAG role, worked out once by the assembler (assemble.span_role)

    def __repr__(self) -> str:
        return f"Span({self.trace_id[:8]}/{self.span_id} {self.name!r})"


class Chunk:
    """A retrieved (or reranked) chunk; ``metadata`` stays the JSON text the span carried."""

    __slots__ = ("id", "content", "score", "metadata")

    def __init__(self, id: str, content: str, score: float | None, metadata: str) -> None:
        self.id = id
        self.content = content
        self.score = score
        self.metadata = metadata

    def as_record(self) -> dict[str, Any]:
        try:
            meta = json.loads(self.metadata) if self.metadata else {}
        except ValueError:
            meta = {"raw": self.metadata}
        if not isinstance(meta, dict):
            meta = {"value": meta}
        return {"id": self.id, "content": self.content, "score": self.score, "metadata": meta}


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


class RagTrace:
    """One assembled RAG call: what ``rag_traces`` stores and the judge reads."""

    __slots__ = (
        "trace_id",
        "service",
        "time",
        "end_time",
        "query",
        "answer",
        "_chunks",
        "_citations",
        "_deferred",
        "corpus_version",
        "model",
        "provider",
        "latency_ms",
        "retrieval_ms",
        "rerank_ms",
        "generation_ms",
        "input_tokens",
        "output_tokens",
        "risk_level",
        "query_type",
        "session_id",
        "user_id",
        "route",
        "status",
        "source",
        "span_count",
        "attributes",
        "complete",
        "sampled",
        "sampled_reason",
        "src_partition",
        "src_offset",
        "row_head",
    )

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.service = ""
        self.time = 0
        self.end_time = 0
        self.query = ""
        self.answer = ""
        self._chunks: list[Chunk] | None = []
        self._citations: list[Citation] | None = []
        # Set by the native fast path instead of the two lists, which only sampled traces need
        # (for their judge message): (build, args, chunk count, top score); `build(*args)`
        # returns (chunks, citations), made on first use.
        self._deferred: tuple[Any, tuple[Any, ...], int, float | None] | None = None
        self.corpus_version = ""
        self.model = ""
        self.provider = ""
        self.latency_ms = 0.0
        self.retrieval_ms = 0.0
        self.rerank_ms = 0.0
        self.generation_ms = 0.0
        self.input_tokens = 0
        self.output_tokens = 0
        self.risk_level = ""
        self.query_type = ""
        self.session_id = ""
        self.user_id = ""
        self.route = ""
        self.status = "ok"
        self.source = "ragpulse"
        self.span_count = 0
        self.attributes: dict[str, Any] = {}
        self.complete = False
        self.sampled = False
        self.sampled_reason = ""
        self.src_partition = -1  # Kafka partition / offset of the last record that fed this trace
        self.src_offset = -1
        # The encoded rag_traces row up to `attributes` (storage._row_head), when the native
        # fast path built the trace; those fields must not change afterwards.
        self.row_head: bytes | None = None

    @property
    def chunks(self) -> list[Chunk]:
        """The retrieved (or reranked) chunks, in order."""
        if self._chunks is None:
            self._make_deferred()
        return self._chunks  # type: ignore[return-value]

    @chunks.setter
    def chunks(self, value: list[Chunk]) -> None:
        self._chunks = value

    @property
    def citations(self) -> list[Citation]:
        """The root span's ``rag.citation`` events, in order."""
        if self._citations is None:
            self._make_deferred()
        return self._citations  # type: ignore[return-value]

    @citations.setter
    def citations(self, value: list[Citation]) -> None:
        self._citations = value

    def _make_deferred(self) -> None:
        build, args, _, _ = self._deferred  # type: ignore[misc]
        self._chunks, self._citations = build(*args)
        self._deferred = None

    @property
    def chunk_count(self) -> int:
        """How many chunks the trace has (without making deferred chunk objects)."""
        if self._chunks is None:
            return self._deferred[2]  # type: ignore[index]
        return len(self._chunks)

    @property
    def top_score(self) -> float | None:
        """The highest retrieval score, or None when no chunk carries a score."""
        if self._chunks is None:
            return self._deferred[3]  # type: ignore[index]
        best = None
        for c in self._chunks:
            if c.score is not None and (best is None or c.score > best):
                best = c.score
        return best

    def judge_message(self) -> dict[str, Any]:
        """The ``ragpulse.judge`` message (docs/contracts.md): a superset of the judge input record."""
        return {
            "trace_id": self.trace_id,
            "service": self.service,
            "time_unix_nano": self.time,
            "end_time_unix_nano": self.end_time,
            "query": self.query,
            "answer": self.answer,
            "chunks": [c.as_record() for c in self.chunks],
            "citations": [c.as_record() for c in self.citations],
            "model": self.model,
            "corpus_version": self.corpus_version,
            "risk_level": self.risk_level,
            "sampled_reason": self.sampled_reason,
            "span_count": self.span_count,
            "attributes": self.attributes,
        }
