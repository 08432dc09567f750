"""Handles returned by the with-statement forms and by ``current_rag()``.

A handle writes into its span's side record (expanded in the export thread), which is of
its span's kind; on an untraced call (sampled out, disabled) every method does nothing.
What a block's work came to goes where a decorated function's return value goes
(``Record.set_result``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import format_trace_id

from .conventions import RAG_REQUEST_ID, RAG_VARIANT, config_key
from .records import GenerationRecord, RagRecord, Record, RetrievalRecord, ToolRecord, listed
from .spans import emit

__all__ = ["RagHandle", "RetrievalHandle", "GenerationHandle", "ToolHandle", "AgentHandle", "add_citation"]


def add_citation(
    record: RagRecord, doc_id: Any, start: int | None, end: int | None, marker: str | None
) -> None:
    """Record that chunk ``doc_id`` supports ``answer[start:end]``."""
    if record.citations is None:
        record.citations = []
    record.citations.append((doc_id, start, end, marker))


class _Handle:
    __slots__ = ("_record", "_span")

    def __init__(self, record: Record | None, span: Any):
        self._record = record
        self._span = span

    @property
    def recording(self) -> bool:
        """False when this call is not traced (sampled out, disabled)."""
        return self._record is not None

    @property
    def trace_id(self) -> str | None:
        """The 32-hex trace id of this call (what Kafka records are keyed by), or None."""
        if self._span is None:
            return None
        return format_trace_id(self._span.get_span_context().trace_id)

    def feedback(self, value: float | None = None, **options: Any) -> bool:
        """Feedback on this call (see :func:`ragpulse.agent.feedback`); the span's parent is this one."""
        if self._span is None:
            return False
        from .feedback import feedback

        ctx = self._span.get_span_context()
        return feedback(format_trace_id(ctx.trace_id), value, span_id=ctx.span_id, **options)

    def set_attribute(self, key: str, value: Any) -> None:
        """Add an attribute to this span (expanded and redacted in the export thread)."""
        if self._record is not None:
            self._record.set_attr(key, value)

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        for key, value in attributes.items():
            self.set_attribute(key, value)

    def _set_input(self, value: Any) -> None:
        """What the span was given (query, prompt, arguments, task)."""
        if self._record is not None:
            self._record.input = value

    def _set_result(self, value: Any) -> None:
        """What the span's work came to (answer, chunks, output, result): as a decorated
        function's return value is kept (``Record.set_result``)."""
        if self._record is not None:
            self._record.set_result(value)


class RagHandle(_Handle):
    """The root of a RAG call: set the query, chunks, answer, citations."""

    __slots__ = ()

    def set_query(self, query: Any) -> None:
        self._set_input(query)

    def set_variant(self, variant: str, **config: Any) -> None:
        """The configuration serving this call (``rag.variant``), e.g. chosen by an A/B split
        inside the call; keyword arguments are its parts' versions (``rag.config.<part>``)."""
        self.set_attribute(RAG_VARIANT, str(variant))
        for part, version in config.items():
            self.set_attribute(config_key(part), version)

    def set_request_id(self, request_id: str) -> None:
        """The user request this call answers (``rag.request.id``): give a shadow call the
        primary's id, and ``ragpulse compare`` pairs the two answers."""
        self.set_attribute(RAG_REQUEST_ID, str(request_id))

    def set_conversation(self, messages: Any) -> None:
        """The messages before the current turn (oldest first): OpenAI-style dicts, LangChain
        messages, ``(role, text)`` pairs. A list is copied now; the current turn is the query."""
        if isinstance(self._record, RagRecord):
            self._record.conversation = listed(messages)

    def set_answer(self, answer: Any) -> None:
        """The answer: a string, or a structured object/dict with ``answer`` and ``citations``."""
        self._set_result(answer)

    def set_chunks(self, chunks: Any, *, name: str = "retrieval", top_k: int | None = None) -> None:
        """Record retrieved chunks as a RETRIEVER child span (for code without a ``@retrieval``)."""
        record = self._record
        if not isinstance(record, RagRecord):
            return
        child = RetrievalRecord(record.input, top_k, record)
        child.set_chunks(chunks)
        emit(name, child)

    def cite(
        self, doc_id: Any, start: int | None = None, end: int | None = None, marker: str | None = None
    ) -> None:
        """An explicit citation: ``doc_id`` (a chunk id, or an int 1-based position) supports answer[start:end]."""
        if isinstance(self._record, RagRecord):
            add_citation(self._record, doc_id, start, end, marker)


class RetrievalHandle(_Handle):
    """A retrieval span opened with ``with retrieval(...) as r``."""

    __slots__ = ()

    def set_chunks(self, chunks: Any) -> None:
        self._set_result(chunks)

    def set_query(self, query: Any) -> None:
        self._set_input(query)

    def set_top_k(self, top_k: int) -> None:
        if isinstance(self._record, RetrievalRecord):
            self._record.top_k = top_k


class GenerationHandle(_Handle):
    """An LLM span opened with ``with generation(model=...) as g``."""

    __slots__ = ()

    def set_output(self, output: Any) -> None:
        """The model's output: text, or a response object (its usage is read too)."""
        self._set_result(output)

    def set_usage(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        if isinstance(self._record, GenerationRecord):
            self._record.usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}

    def set_model(self, model: str) -> None:
        if isinstance(self._record, GenerationRecord):
            self._record.model = model

    def set_prompt(self, prompt: Any) -> None:
        self._set_input(prompt)

    def set_chunks(self, chunks: Any) -> None:
        """The chunks this generation is given, in its order: the answer's ``[n]`` markers refer to them."""
        if isinstance(self._record, GenerationRecord):
            self._record.set_documents(chunks)


class ToolHandle(_Handle):
    """A tool call span opened with ``with tool("name") as t``."""

    __slots__ = ()

    def set_arguments(self, arguments: Any) -> None:
        """The call's arguments (a mapping by parameter name, or the JSON text the model sent)."""
        self._set_input(arguments)

    def set_result(self, result: Any) -> None:
        self._set_result(result)

    def set_call_id(self, call_id: str) -> None:
        """The model's id of this tool call (``gen_ai.tool.call.id``)."""
        if isinstance(self._record, ToolRecord):
            self._record.call_id = call_id


class AgentHandle(_Handle):
    """An agent step span opened with ``with agent_step("name") as a``."""

    __slots__ = ()

    def set_input(self, task: Any) -> None:
        self._set_input(task)

    def set_output(self, output: Any) -> None:
        self._set_result(output)
