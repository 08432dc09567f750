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

__all__ = [
    "RagRecord",
    "RetrievalRecord",
    "GenerationRecord",
    "ToolRecord",
    "AgentRecord",
    "Record",
    "listed",
]


def listed(value: Any) -> list[Any] | tuple[Any, ...] | None:
    """A list argument copied (the application may append to it once the call returns), a tuple as
    it is, a single mapping as a one-item list; None for anything else (an iterator is never consumed)."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, tuple):
        return value
    if isinstance(value, Mapping):
        return [value]
    return None


class Record:
    """Base of the record kinds; ``attrs`` holds user-set extra attributes. Once the call returns,
    the record is what the request path queues: it carries its live span and the end time
    (:meth:`ragpulse.agent.spans.Call.close`) to the agent's thread, which ends the span (the
    queue holds no other object per span)."""

    __slots__ = ("attrs", "parts", "stream_closed", "input", "span", "end_time")
    kind = ""

    def __init__(self) -> None:
        self.attrs: dict[str, Any] | None = None
        self.parts: list[Any] | None = None  # streamed items, joined at export
        self.stream_closed = False
        self.input: Any = None
        self.span: Any = None  # the span to end, from the call's return until the agent's thread ends it
        self.end_time = 0  # when the call returned (ns since the epoch)

    def set_attr(self, key: str, value: Any) -> None:
        if self.attrs is None:
            self.attrs = {}
        self.attrs[key] = value

    def set_result(self, result: Any) -> None:
        """Keep what the call returned (a decorated function's return value, or what a
        with-statement block's handle is given): the answer, chunks, output or tool result."""
        raise NotImplementedError


class RagRecord(Record):
    """The root span of one RAG call."""

    __slots__ = ("answer", "citations", "conversation", "retrievals", "generations", "sources_cache")
    kind = "rag"

    def __init__(self, query: Any = None) -> None:
        super().__init__()
        self.input = query
        self.answer: Any = None
        self.citations: list[tuple[Any, int | None, int | None, str | None]] | None = None
        self.conversation: Any = None  # the messages before the current turn (a list copy)
        # The call's retrievals and rerankers in start order, and its generations that were given
        # chunks: what the answer's citation markers refer to (agent/answer_sources.py).
        self.retrievals: list[RetrievalRecord] | None = None
        self.generations: list[GenerationRecord] | None = None
        self.sources_cache: Any = None  # the export thread's index of the retrieved chunks

    def add_retrieval(self, record: RetrievalRecord) -> None:
        if self.retrievals is None:
            self.retrievals = []
        self.retrievals.append(record)

    def add_generation(self, record: GenerationRecord) -> None:
        if self.generations is None:
            self.generations = []
        if record not in self.generations:
            self.generations.append(record)

    def set_result(self, result: Any) -> None:
        self.answer = result


class RetrievalRecord(Record):
    """A retriever span: the returned chunks."""

    __slots__ = ("chunks", "top_k", "reranker", "normalized")
    kind = "retrieval"

    def __init__(self, query: Any = None, top_k: Any = None, root: RagRecord | None = None) -> None:
        super().__init__()
        self.input = query
        self.chunks: Any = None
        self.top_k = top_k
        self.reranker = False
        self.normalized: Any = None  # the chunks normalised, once, by the export thread
        if root is not None:
            root.add_retrieval(self)

    def set_chunks(self, chunks: Any) -> None:
        """Keep a shallow copy of a returned chunk list (never consume an iterator the app will use)."""
        if isinstance(chunks, (list, tuple)):
            chunks = list(chunks)
        elif not isinstance(chunks, Mapping):
            return
        self.chunks = chunks

    set_result = set_chunks


class GenerationRecord(Record):
    """An LLM call: model, provider, usage and output."""

    __slots__ = ("model", "provider", "output", "usage", "documents", "root")
    kind = "generation"

    def __init__(
        self,
        model: str | None = None,
        provider: str | None = None,
        prompt: Any = None,
        root: RagRecord | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.provider = provider
        self.input = prompt
        self.output: Any = None
        self.usage: Any = None
        self.documents: Any = None  # the chunks the generation was given (a list copy)
        self.root = root

    def set_documents(self, documents: Any) -> None:
        """The chunks this generation is given (a list or tuple); the answer's markers may refer to them."""
        if not isinstance(documents, (list, tuple)):
            return  # a formatted context string, or a mapping of prompt variables: not a chunk list
        docs = listed(documents)
        self.documents = docs
        if self.root is not None:
            self.root.add_generation(self)

    def set_result(self, result: Any) -> None:
        self.output = result


class ToolRecord(Record):
    """A tool call: its name, the call's arguments (positional ones named by ``params``) and result."""

    __slots__ = ("name", "description", "call_id", "args", "kwargs", "params", "result")
    kind = "tool"

    def __init__(self, name: str, description: str | None = None, call_id: Any = None) -> None:
        super().__init__()
        self.name = name
        self.description = description
        self.call_id = call_id
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] | None = None
        self.params: Any = None  # the decorated function's parameters (see agent/tools.py)
        self.result: Any = None

    def set_result(self, result: Any) -> None:
        self.result = result


class AgentRecord(Record):
    """An agent step: the agent's name (and id, description), its input and output."""

    __slots__ = ("name", "agent_id", "description", "output")
    kind = "agent"

    def __init__(self, name: str, agent_id: Any = None, description: str | None = None, task: Any = None):
        super().__init__()
        self.name = name
        self.agent_id = agent_id
        self.description = description
        self.input = task
        self.output: Any = None

    def set_result(self, result: Any) -> None:
        self.output = result
