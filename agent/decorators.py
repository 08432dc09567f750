"""``trace_rag``, ``retrieval``, ``generation`` and ``cite``: the request-path half of the agent.

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
:mod:`.wrappers`, the span kinds in :mod:`.specs`, the handles in :mod:`.handles`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.context import get_current
from opentelemetry.trace import get_current_span

from .conventions import RAG_CORPUS_VERSION, RAG_QUERY_TYPE, RAG_RISK_LEVEL, RAG_VARIANT, config_key
from .handles import GenerationHandle, RagHandle, RetrievalHandle, add_citation
from .records import RagRecord
from .spans import RAG_KEY, internal_error
from .specs import GenerationSpec, RagSpec, RetrievalSpec

__all__ = [
    "trace_rag",
    "retrieval",
    "generation",
    "cite",
    "current_rag",
    "current_trace_id",
    "RagHandle",
    "RetrievalHandle",
    "GenerationHandle",
]

_NO_QUERY = object()


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
    """
    attrs = _rag_attrs(attributes, corpus_version, risk_level, query_type, variant, config)
    if callable(fn_or_name) and not isinstance(fn_or_name, str):
        return RagSpec(name, attrs, None, query_arg, False)(fn_or_name)
    spec_name = fn_or_name if isinstance(fn_or_name, str) else name
    has_query = query is not _NO_QUERY
    return RagSpec(spec_name, attrs, query if has_query else None, query_arg, has_query)


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
    if callable(fn_or_name) and not isinstance(fn_or_name, str):
        return RetrievalSpec(name or None, attributes, query, query_arg, top_k, reranker)(fn_or_name)
    spec_name = fn_or_name if isinstance(fn_or_name, str) else name
    return RetrievalSpec(spec_name, attributes, query, query_arg, top_k, reranker)


def generation(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    prompt_arg: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """Mark an LLM call: model, tokens (from a returned usage object) and output.

    ``@generation(model="gpt-4o", provider="openai")``; a ``model=`` keyword
    argument of the call is used when ``model`` is not given here.
    ``with generation(model=...) as g: g.set_output(...)`` for undecoratable code.
    """
    if callable(fn_or_name) and not isinstance(fn_or_name, str):
        return GenerationSpec(name, attributes, model, provider, prompt_arg)(fn_or_name)
    spec_name = fn_or_name if isinstance(fn_or_name, str) else name
    return GenerationSpec(spec_name, attributes, model, provider, prompt_arg)


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
