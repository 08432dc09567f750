"""``trace_rag``, ``retrieval``, ``generation``, ``tool``, ``agent_step`` and ``cite``: the request-path half
of the agent.

Each traced call opens an OTel span, makes it current (so spans of other
instrumentation nest under it), keeps references to the raw objects in a side
record (:mod:`ragpulse.agent.records`) and ends the span. Nothing else runs
while the application waits: attribute flattening, marker parsing, truncation
and redaction happen in the export thread. With ``exporter="none"`` the spans
belong to the application's provider, whose processors see the span at
``end()``, so there the record is expanded just before ``end()``.

Every form keeps the decorated callable's signature, return value, exceptions
and docstring; ragpulse errors are caught and counted, never raised into the
application. Works for sync and async functions, methods, and sync/async
generators (the span then ends when the stream ends or is closed). The span
lifecycle is in :mod:`.spans`, the adapters per kind of callable in
:mod:`.wrappers`, the span kinds in :mod:`.specs` and :mod:`.tools`, the handles in :mod:`.handles`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.context import get_current
from opentelemetry.trace import get_current_span

from .conventions import RAG_CORPUS_VERSION, RAG_QUERY_TYPE, RAG_RISK_LEVEL, RAG_VARIANT, config_key
from .handles import AgentHandle, GenerationHandle, RagHandle, RetrievalHandle, ToolHandle, add_citation
from .records import RagRecord
from .spans import RAG_KEY, internal_error
from .specs import GenerationSpec, RagSpec, RetrievalSpec, Spec
from .tools import AgentStepSpec, ToolSpec

__all__ = [
    "trace_rag",
    "retrieval",
    "generation",
    "tool",
    "agent_step",
    "cite",
    "set_conversation",
    "current_rag",
    "current_trace_id",
    "RagHandle",
    "RetrievalHandle",
    "GenerationHandle",
    "ToolHandle",
    "AgentHandle",
]

_NO_QUERY = object()


def _marked(kind: type[Spec], fn_or_name: Any, name: str | None, *options: Any) -> Any:
    """A span kind's spec with ``options``: applied at once when ``fn_or_name`` is the callable
    itself (bare ``@tool``), else returned to decorate or to open a block (``@tool("lookup")``,
    ``with tool(...)``), named by ``fn_or_name`` when that is a string, else by ``name``."""
    if callable(fn_or_name) and not isinstance(fn_or_name, str):
        return kind(name, *options)(fn_or_name)
    return kind(fn_or_name if isinstance(fn_or_name, str) else name, *options)


def _rag_attrs(
    attributes: Mapping[str, Any] | None,
    corpus_version: str | None,
    risk_level: str | None,
    query_type: str | None,
    variant: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    attrs = dict(attributes or {})
    for part, value in (config or {}).items():
        attrs[config_key(part)] = value
    for key, value in (
        (RAG_CORPUS_VERSION, corpus_version),
        (RAG_RISK_LEVEL, risk_level),
        (RAG_QUERY_TYPE, query_type),
        (RAG_VARIANT, variant),
    ):
        if value is not None:
            attrs[key] = value
    return attrs or None


def trace_rag(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    query: Any = _NO_QUERY,
    query_arg: str | None = None,
    corpus_version: str | None = None,
    risk_level: str | None = None,
    query_type: str | None = None,
    variant: str | None = None,
    config: Mapping[str, Any] | None = None,
    attributes: Mapping[str, Any] | None = None,
    conversation: Any = None,
    conversation_arg: str | None = None,
) -> Any:
    """Mark a RAG call: the root span (query from the arguments, answer from the return value).

    ``@trace_rag``, ``@trace_rag("name", risk_level="high")`` or, for code that
    cannot be decorated, ``with trace_rag("answer", query=q) as rag: ...``.
    The query is the argument named ``query_arg``, else the first of
    query/question/q/prompt/input/..., else the first positional argument.
    Arguments named ``session_id``/``user_id`` become ``session.id``/``user.id``.
    ``variant`` (``rag.variant``) names the configuration that serves the call, for
    ``ragpulse compare``; ``config`` maps parts (``reranker``, ``prompt``, ...) to their
    versions (``rag.config.<part>``). Both override ``configure(variant=, config=)``.
    The conversation before this turn is the argument named ``conversation_arg``, else the
    first of history/messages/chat_history/conversation (OpenAI-style message dicts, LangChain
    messages), or ``conversation=[...]`` given here (the with-statement form), or
    :func:`set_conversation` inside the call. A function whose query argument is the message
    list itself (``def chat(messages)``) has its last user message as the query.
    """
    attrs = _rag_attrs(attributes, corpus_version, risk_level, query_type, variant, config)
    if callable(fn_or_name) and not isinstance(fn_or_name, str):
        return RagSpec(name, attrs, None, query_arg, False, conversation, conversation_arg)(fn_or_name)
    spec_name = fn_or_name if isinstance(fn_or_name, str) else name
    has_query = query is not _NO_QUERY
    query_value = query if has_query else None
    return RagSpec(spec_name, attrs, query_value, query_arg, has_query, conversation, conversation_arg)


def retrieval(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    query: Any = None,
    query_arg: str | None = None,
    top_k: int | None = None,
    reranker: bool = False,
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """Mark a retriever (or, with ``reranker=True``, a reranker): its return value is the chunks.

    Chunks may be dicts, objects with id/content/score/metadata, LangChain
    ``Document`` (or ``(Document, score)`` pairs) or LlamaIndex ``NodeWithScore``.
    ``with retrieval("search") as r: r.set_chunks(...)`` for undecoratable code.
    """
    return _marked(RetrievalSpec, fn_or_name, name, attributes, query, query_arg, top_k, reranker)


def generation(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    prompt_arg: str | None = None,
    chunks_arg: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """Mark an LLM call: model, tokens (from a returned usage object) and output.

    ``@generation(model="gpt-4o", provider="openai")``; a ``model=`` keyword
    argument of the call is used when ``model`` is not given here. The chunks the call is
    given (a list argument named ``chunks_arg``, else the first of chunks/documents/docs/
    context/contexts/passages/sources/nodes/evidence) are what the answer's ``[n]`` refer to.
    ``with generation(model=...) as g: g.set_output(...)`` for undecoratable code.
    """
    return _marked(GenerationSpec, fn_or_name, name, attributes, model, provider, prompt_arg, chunks_arg)


def tool(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    call_id: str | None = None,
    arguments: Any = None,
    call_id_arg: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """Mark a tool the application (or its agent) calls: an ``execute_tool <name>`` span.

    The tool's name is ``name`` or the function's; its description ``description`` or the first
    paragraph of the docstring. The call's arguments (by parameter name) and its return value
    are recorded; the model's tool call id comes from an argument named ``call_id_arg``, else
    ``tool_call_id``/``call_id`` (left out of the arguments). The result is evidence the
    collector's judge may check the answer against.
    ``with tool("lookup", arguments={...}, call_id="call_1") as t: t.set_result(...)`` for
    undecoratable code.
    """
    return _marked(ToolSpec, fn_or_name, name, attributes, description, call_id, arguments, call_id_arg)


def agent_step(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    agent_id: str | None = None,
    description: str | None = None,
    task: Any = None,
    input_arg: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """Mark one step of an agent: an ``invoke_agent <name>`` span around the retrievals,
    generations and tool calls it makes.

    The agent's name is ``name`` or the function's; its input the argument named ``input_arg``,
    else the first of query/question/.../task/messages, else the first positional argument; its
    output the return value. ``with agent_step("planner", task=q) as a: a.set_output(...)``.
    """
    return _marked(AgentStepSpec, fn_or_name, name, attributes, agent_id, description, task, input_arg)


def current_rag() -> RagHandle:
    """The handle of the RAG call running in this context (a no-op handle outside one)."""
    try:
        ctx = get_current()
        record = ctx.get(RAG_KEY)
        if isinstance(record, RagRecord):
            return RagHandle(record, get_current_span(ctx))
    except Exception:  # noqa: BLE001
        internal_error("current_rag")
    return RagHandle(None, None)


def current_trace_id() -> str | None:
    """The 32-hex trace id of the RAG call running in this context (keep it for later feedback)."""
    return current_rag().trace_id


def set_conversation(messages: Any) -> None:
    """The conversation before the current turn of the RAG call running in this context (oldest
    first; OpenAI-style message dicts, LangChain messages, ``(role, text)`` pairs). No-op outside one."""
    try:
        record = get_current().get(RAG_KEY)
        if isinstance(record, RagRecord):
            RagHandle(record, None).set_conversation(messages)
    except Exception:  # noqa: BLE001
        internal_error("set_conversation")


def cite(doc_id: Any, start: int | None = None, end: int | None = None, *, marker: str | None = None) -> None:
    """Record that chunk ``doc_id`` supports ``answer[start:end]`` in the current RAG call.

    ``doc_id`` is a chunk id, or an int 1-based position in the retrieved chunks.
    Outside a traced RAG call this does nothing.
    """
    try:
        record = get_current().get(RAG_KEY)
        if isinstance(record, RagRecord):
            add_citation(record, doc_id, start, end, marker)
    except Exception:  # noqa: BLE001
        internal_error("cite")
