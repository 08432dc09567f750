"""Side records: what the request path stashes on a span, for the export thread to expand.

The decorators do the minimum while the application waits: they keep
references to the raw Python objects (query, returned chunks, answer, usage)
in one of these records, filed under the span's id for the export thread. Flattening into
OpenInference / gen_ai attributes, truncation, marker parsing and redaction
happen later in :mod:`ragpulse.agent.materialize`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RagRecord", "RetrievalRecord", "GenerationRecord", "Record"]


class Record:
    """Base of the three record kinds; ``attrs`` holds user-set extra attributes."""

    __slots__ = ("attrs", "parts", "stream_closed", "input")
    kind = ""

    def __init__(self) -> None:
        self.attrs: dict[str, Any] | None = None
        self.parts: list[Any] | None = None  # streamed items, joined at export
        self.stream_closed = False
        self.input: Any = None

    def set_attr(self, key: str, value: Any) -> None:
        if self.attrs is None:
            self.attrs = {}
        self.attrs[key] = value


class RagRecord(Record):
    """The root span of one RAG call."""

    __slots__ = ("answer", "chunks", "citations", "chunk_ids_cache")
    kind = "rag"

    def __init__(self, query: Any = None) -> None:
        super().__init__()
        self.input = query
        self.answer: Any = None
        self.chunks: Any = None  # the latest retrieved chunk list (for positional markers)
        self.citations: list[tuple[Any, int | None, int | None, str | None]] | None = None
        self.chunk_ids_cache: list[str] | None = None


class RetrievalRecord(Record):
    """A retriever span: the returned chunks."""

    __slots__ = ("chunks", "top_k", "root", "reranker")
    kind = "retrieval"

    def __init__(self, query: Any = None, top_k: Any = None, root: RagRecord | None = None) -> None:
        super().__init__()
        self.input = query
        self.chunks: Any = None
        self.top_k = top_k
        self.root = root
        self.reranker = False

    def set_chunks(self, chunks: Any) -> None:
        """Keep a shallow copy of a returned chunk list (never consume an iterator the app will use).

        The root RAG record sees the latest list too: positional citation markers refer to it.
        """
        if isinstance(chunks, (list, tuple)):
            chunks = list(chunks)
        elif not isinstance(chunks, Mapping):
            return
        self.chunks = chunks
        if self.root is not None:
            self.root.chunks = chunks


class GenerationRecord(Record):
    """An LLM call: model, provider, usage and output."""

    __slots__ = ("model", "provider", "output", "usage")
    kind = "generation"

    def __init__(self, model: str | None = None, provider: str | None = None, prompt: Any = None) -> None:
        super().__init__()
        self.model = model
        self.provider = provider
        self.input = prompt
        self.output: Any = None
        self.usage: Any = None
