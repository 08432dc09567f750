"""Turn one trace's spans into a :class:`~.model.RagTrace`: the span-to-trace conventions.

:func:`span_role` says what a span is (retriever, reranker, LLM, chain) and
:func:`build_trace` reads the trace's fields from its spans. Both understand
ragpulse spans, OpenInference spans (LangChain / LlamaIndex instrumentors) and
gen_ai spans (OpenLLMetry and the OTel GenAI conventions); the keys are
``agent/conventions.py``. A span's documents are read by :mod:`.documents`, the
query and answer texts by :mod:`.texts`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ...agent.citations import parse_citations
from ...agent.conventions import (
    CHAIN_OPS,
    CITATION_DOCUMENT_ID,
    CITATION_END,
    CITATION_EVENT,
    CITATION_MARKER,
    CITATION_START,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_RETRIEVAL_DOCUMENTS,
    GEN_AI_SYSTEM,
    HTTP_ROUTE,
    INPUT_VALUE,
    KIND_AGENT,
    KIND_CHAIN,
    KIND_LLM,
    KIND_RERANKER,
    KIND_RETRIEVER,
    KIND_TOOL,
    LLM_MODEL_NAME,
    LLM_OPS,
    LLM_PROVIDER,
    LLM_TOKEN_COUNT_COMPLETION,
    LLM_TOKEN_COUNT_PROMPT,
    OP_RERANK,
    OUTPUT_VALUE,
    RAG_CITATION_COUNT,
    RAG_CORPUS_VERSION,
    RAG_QUERY_TYPE,
    RAG_RISK_LEVEL,
    RAG_ROOT,
    RAG_VARIANT,
    RETRIEVAL_DOCUMENTS,
    RETRIEVAL_OPS,
    ROLE_TOOL,
    SESSION_ID,
    SPAN_KIND,
    TOOL_OPS,
    TRACELOOP_SPAN_KIND,
    TRACELOOP_WORKFLOW,
    USER_ID,
    document_key,
)
from ..core.model import STATUS_ERROR, Citation, RagTrace, Span
from ..core.native import native_function, with_fallback
from .conversation import (
    ROOT_MESSAGE_KEYS,
    before_turn,
    conversation_keys,
    generation_conversation,
    root_conversation,
)
from .evidence import marker_ids, retrieved_chunks, tool_chunks
from .texts import llm_answer, llm_messages, llm_query, retrieval_query, root_answer, root_query

__all__ = ["build_trace", "span_role"]


_RETRIEVAL_OPS = frozenset(RETRIEVAL_OPS)
_LLM_OPS = frozenset(LLM_OPS)
_CHAIN_OPS = frozenset(CHAIN_OPS)
_TOOL_OPS = frozenset(TOOL_OPS)
_MESSAGES_KEY, _FLAT_MESSAGES_KEY = ROOT_MESSAGE_KEYS
# A span with documents but no kind or operation is a retrieval.
_FIRST_DOCUMENT = (
    document_key(RETRIEVAL_DOCUMENTS, 0, "content"),
    document_key(RETRIEVAL_DOCUMENTS, 0, "id"),
)


_KIND_ROLES = {
    KIND_RETRIEVER: "retriever",
    KIND_RERANKER: "reranker",
    KIND_LLM: "llm",
    KIND_TOOL: "tool",
    KIND_CHAIN: "chain",
    KIND_AGENT: "chain",
}


def _role(attrs: dict[str, Any]) -> str:
    """'retriever', 'reranker', 'llm', 'tool', 'chain' (an agent step too) or '' for a span's attributes."""
    kind = attrs.get(SPAN_KIND)
    if kind is not None:
        # An exact upper-case kind (what instrumentations write) is its own upper case.
        role = _KIND_ROLES.get(kind) if type(kind) is str else None
        if role is None:
            role = _KIND_ROLES.get(str(kind).upper())
        if role is not None:
            return role
    op = attrs.get(GEN_AI_OPERATION)
    if op is not None:
        op = str(op)
        if op in _RETRIEVAL_OPS:
            return "retriever"
        if op in _LLM_OPS:
            return "llm"
        if op == OP_RERANK:
            return "reranker"
        if op in _TOOL_OPS:
            return "tool"
        if op in _CHAIN_OPS:
            return "chain"
    if GEN_AI_SYSTEM in attrs or GEN_AI_REQUEST_MODEL in attrs or LLM_MODEL_NAME in attrs:
        return "llm"
    if _FIRST_DOCUMENT[0] in attrs or _FIRST_DOCUMENT[1] in attrs or GEN_AI_RETRIEVAL_DOCUMENTS in attrs:
        return "retriever"
    if attrs.get(TRACELOOP_SPAN_KIND) == TRACELOOP_WORKFLOW:
        return "chain"
    return ""


def span_role(span: Span) -> str:
    """The span's RAG role ('retriever', 'reranker', 'llm', 'tool', 'chain' or ''), computed once."""
    role = span.role
    if role is None:
        role = span.role = _role(span.attrs)
    return role


def _ms(span: Span | None) -> float:
    return (span.end - span.start) / 1e6 if span is not None else 0.0


def _total_ms(spans: list[Span]) -> float:
    """The spans' durations added left to right (an explicit loop: sum() of floats rounds
    differently from Python 3.12 on, and stored figures must not depend on the version)."""
    total = 0.0
    for s in spans:
        total += (s.end - s.start) / 1e6
    return total


_TOKENS_MAX = 2**32 - 1  # rag_traces token columns are UInt32
_POSITION_MAX = 2**31 - 1  # citation positions are Int32


def _int(value: Any, low: int = 0, high: int = _TOKENS_MAX) -> int:
    """An integer attribute clamped to its column's range (0 when it is not a number), so one
    absurd value cannot make a whole batch fail to insert."""
    if type(value) is int and low <= value <= high:  # what the agent writes: no conversion
        return value
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return low if n < low else high if n > high else n


class _Parts(NamedTuple):
    """A trace's spans sorted by role: what :func:`build_trace` reads each field from."""

    root: Span | None  # the RAG call's root (see _parts)
    trace_root: Span | None
    retrievers: list[Span]
    rerankers: list[Span]
    llms: list[Span]
    tools: list[Span]
    chains: list[Span]  # every chain or agent step, the root among them
    error: bool
    first: Span
    end: int


def _parts(spans: list[Span]) -> _Parts:
    rag_root = trace_root = chain = None
    retrievers: list[Span] = []
    rerankers: list[Span] = []
    llms: list[Span] = []
    tools: list[Span] = []
    chains: list[Span] = []
    error = False
    first = spans[0]
    end = first.end
    for s in spans:
        if s.status == STATUS_ERROR:
            error = True
        if s.attrs.get(RAG_ROOT):
            rag_root = s
        if not s.parent_id:
            trace_root = s
        if s.start < first.start:
            first = s
        if s.end > end:
            end = s.end
        role = s.role
        if role is None:
            role = span_role(s)
        if role == "retriever":
            retrievers.append(s)
        elif role == "reranker":
            rerankers.append(s)
        elif role == "llm":
            llms.append(s)
        elif role == "tool":
            tools.append(s)
        elif role == "chain":
            chains.append(s)
            if chain is None or s.start < chain.start:
                chain = s
    # The RAG call's root: ragpulse's, else the outermost chain (OpenInference CHAIN,
    # OpenLLMetry workflow), else the trace's own root.
    return _Parts(
        rag_root or chain or trace_root,
        trace_root,
        retrievers,
        rerankers,
        llms,
        tools,
        chains,
        error,
        first,
        end,
    )


def _source(spans: list[Span]) -> str:
    """Which instrumentation wrote a trace without a ragpulse root."""
    if any(SPAN_KIND in s.attrs for s in spans):
        return "openinference"
    if any(TRACELOOP_SPAN_KIND in s.attrs for s in spans):
        return "openllmetry"
    return "gen_ai"


def build_trace(trace_id: str, spans: list[Span]) -> RagTrace:
    """Turn one trace's spans into a :class:`RagTrace` (fields it cannot find stay empty)."""
    t = RagTrace(trace_id)
    t.span_count = len(spans)
    p = _parts(spans)
    root = p.root
    ra: dict[str, Any] = root.attrs if root is not None else {}
    trusted = RAG_ROOT in ra
    if not trusted:
        t.source = _source(spans)
    t.time = (root or p.first).start
    t.end_time = p.end
    t.service = (root or p.first).service
    t.root_span_id = (root or p.first).span_id
    t.latency_ms = _ms(root) if root is not None else (t.end_time - t.time) / 1e6
    _read_chunks(t, p, spans)
    _read_texts(t, p, ra, trusted)
    if p.llms:
        _read_generation(t, p.llms)
    if root is not None:
        t.citations = _citations(root)
        if not t.citations and not trusted and t.answer and RAG_CITATION_COUNT not in ra:
            # Other instrumentation records no citations: read the answer's markers as the agent
            # does, against the chunks the writing generation was given, else the retrieved ones.
            ids = marker_ids(p.llms, t.chunks, t.answer)
            t.citations = [
                Citation(c.doc_id, c.marker, c.start, c.end) for c in parse_citations(t.answer, ids)
            ]
    if not trusted:
        _read_conversation(t, p, ra)
    elif _MESSAGES_KEY in ra or _FLAT_MESSAGES_KEY in ra:  # most calls are single turns: no call
        t.conversation = root_conversation(ra)
    _read_root(t, ra, p.trace_root)
    t.status = "error" if p.error else "ok"
    return t


def _read_chunks(t: RagTrace, p: _Parts, spans: list[Span]) -> None:
    """The evidence (:mod:`.evidence`): the retrievals' chunks (a reranker's output in place of
    what was retrieved before it), each with its query, then the tool calls' results."""
    if p.retrievers or p.rerankers:
        t.chunks = retrieved_chunks(p.retrievers, p.rerankers)
        if p.retrievers:
            t.retrieval_ms = _total_ms(p.retrievers)
        if p.rerankers:
            t.rerank_ms = _total_ms(p.rerankers)
    if p.tools:
        t.chunks.extend(tool_chunks(p.tools, p.retrievers, spans))


def _read_conversation(t: RagTrace, p: _Parts, ra: dict[str, Any]) -> None:
    """Other instrumentation's conversation before the user's turn (:mod:`.conversation`; a
    ragpulse root's is its own): the root's messages before that turn, else those the
    generation that wrote the answer was given. A root whose messages hold nothing before the
    turn, or do not hold the turn (OpenInference writes a LangGraph root's input messages: the
    new turn alone when a checkpointer keeps the history, else the first message only), defers
    to the generation, which was given the whole conversation."""
    messages = root_conversation(ra)
    before = before_turn(messages, t.query, False) if messages else []
    if p.llms and (not before or len(before) == len(messages)):
        before = generation_conversation(p.llms, t.answer, t.query)
    t.conversation = before


def _read_texts(t: RagTrace, p: _Parts, ra: dict[str, Any], trusted: bool) -> None:
    """Query and answer: the root's, else the last LLM output that has text for the answer; for
    the query the input of another chain (outermost first: OpenLLMetry's LangGraph workflow
    under its invoke_agent root), an agent's user turn (:func:`_agent_turn`), the first
    retrieval's query, and last the LLM's user message."""
    t.query = root_query(ra, trusted)
    t.answer = root_answer(ra, trusted)
    if not t.query and p.chains:
        for c in sorted(p.chains, key=_by_start):
            t.query = root_query(c.attrs, False) if c is not p.root else ""
            if t.query:
                break
    if not t.query and p.llms:
        t.query = _agent_turn(p)
    if not t.query:
        for r in sorted(p.retrievers, key=lambda s: s.start):
            t.query = retrieval_query(r.attrs)
            if t.query:
                break
    if p.llms and (not t.answer or not t.query):
        ordered = sorted(p.llms, key=lambda s: s.end, reverse=True)
        if not t.answer:
            t.answer = next((text for s in ordered if (text := llm_answer(s))), "")
        if not t.query:
            t.query = next((q for s in ordered if (q := llm_query(s))), "")


def _by_start(span: Span) -> int:
    return span.start


def _by_end(span: Span) -> int:
    return span.end


_ABSENT = object()  # a token attribute that is not there (one that is there may hold None)


def _agent_turn(p: _Parts) -> str:
    """The user's turn of an agent's trace (tool calls, or tool results among the messages a
    generation was given): the last user message the first generation was given, where a
    retrieval's query is the model's own rewrite. '' for other traces, whose generation may
    have been given a prompt with the retrieved context in it."""
    ordered = sorted(p.llms, key=_by_start)
    if not p.tools and not any(role == ROLE_TOOL for s in ordered for role, _ in llm_messages(s)):
        return ""
    return next((q for s in ordered if (q := llm_query(s))), "")


def _read_generation(t: RagTrace, llms: list[Span]) -> None:
    """The fields the LLM spans give: from the last one to end the model and provider; from
    all of them the tokens and the time."""
    la = (llms[0] if len(llms) == 1 else max(llms, key=_by_end)).attrs
    get = la.get
    t.model = str(get(GEN_AI_REQUEST_MODEL) or get(GEN_AI_RESPONSE_MODEL) or get(LLM_MODEL_NAME) or "")
    t.provider = str(get(GEN_AI_PROVIDER) or get(GEN_AI_SYSTEM) or get(LLM_PROVIDER) or "")
    inp = out = 0
    for s in llms:
        get = s.attrs.get
        n = get(GEN_AI_INPUT_TOKENS, _ABSENT)
        if n is _ABSENT:
            n = get(LLM_TOKEN_COUNT_PROMPT)
        inp += n if type(n) is int and 0 <= n <= _TOKENS_MAX else _int(n)
        n = get(GEN_AI_OUTPUT_TOKENS, _ABSENT)
        if n is _ABSENT:
            n = get(LLM_TOKEN_COUNT_COMPLETION)
        out += n if type(n) is int and 0 <= n <= _TOKENS_MAX else _int(n)
    t.input_tokens = min(_TOKENS_MAX, inp)
    t.output_tokens = min(_TOKENS_MAX, out)
    t.generation_ms = _total_ms(llms)


_native_citations = native_function("citation_events")
_CITATION_KEYS = (CITATION_DOCUMENT_ID, CITATION_MARKER, CITATION_START, CITATION_END)


def _citations_native(root: Span) -> list[Citation]:
    """``ragpulse_native.citation_events``: the citations :func:`_citations_py` reads, odd values
    read by :func:`_int` either way (a list of ``(name, time, attrs)`` tuples; the reference
    reads any other sequence)."""
    events = root.events
    if type(events) is not list:
        return _citations_py(root)
    return _native_citations(events, CITATION_EVENT, _CITATION_KEYS, Citation, (_int, -1, _POSITION_MAX))


def _citations_py(root: Span) -> list[Citation]:
    """The Python reading of :func:`_citations`."""
    out = []
    for name, _ts, ea in root.events:
        if name == CITATION_EVENT:
            doc, marker = ea.get(CITATION_DOCUMENT_ID, ""), ea.get(CITATION_MARKER, "")
            out.append(
                Citation(
                    doc if type(doc) is str else str(doc),
                    marker if type(marker) is str else str(marker),
                    _int(ea.get(CITATION_START, -1), -1, _POSITION_MAX),
                    _int(ea.get(CITATION_END, -1), -1, _POSITION_MAX),
                )
            )
    return out


# The root span's citation events, in order: native when the module is in use (a failure
# answered by the reference, collector/core/native.py), else _citations_py.
_citations = with_fallback(
    "citation_events", _citations_native if _native_citations is not None else None, _citations_py
)


def _read_root(t: RagTrace, ra: dict[str, Any], trace_root: Span | None) -> None:
    """The fields the root span's attributes give (the route also from the trace's own root)."""
    t.corpus_version = str(ra.get(RAG_CORPUS_VERSION, "") or "")
    t.risk_level = str(ra.get(RAG_RISK_LEVEL, "") or "")
    t.query_type = str(ra.get(RAG_QUERY_TYPE, "") or "")
    t.variant = str(ra.get(RAG_VARIANT, "") or "")
    t.session_id = str(ra.get(SESSION_ID) or ra.get(GEN_AI_CONVERSATION_ID) or "")
    t.user_id = str(ra.get(USER_ID, "") or "")
    route = ra.get(HTTP_ROUTE)
    if route is None and trace_root is not None:
        route = trace_root.attrs.get(HTTP_ROUTE)
    t.route = str(route or "")
    attributes = dict(ra)
    attributes.pop(INPUT_VALUE, None)
    attributes.pop(OUTPUT_VALUE, None)
    if t.conversation:
        for key in conversation_keys(ra):
            attributes.pop(key, None)
    t.attributes = attributes
