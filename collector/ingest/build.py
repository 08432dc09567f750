"""Turn one trace's spans into a :class:`~.model.RagTrace`: the span-to-trace conventions.

:func:`span_role` says what a span is (retriever, reranker, LLM, chain) and
:func:`build_trace` reads the trace's fields from its spans. Both understand
ragpulse spans, OpenInference spans (LangChain / LlamaIndex instrumentors) and
gen_ai spans (OpenLLMetry and the OTel GenAI conventions); the keys are
``agent/conventions.py``.
"""

from __future__ import annotations

import json
from typing import Any

from ...agent.conventions import (
    CITATION_DOCUMENT_ID,
    CITATION_END,
    CITATION_EVENT,
    CITATION_MARKER,
    CITATION_START,
    DOCUMENT_FIELDS,
    GEN_AI_COMPLETION_CONTENT,
    GEN_AI_CONTENT,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_PROMPT,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_ROLE,
    GEN_AI_SYSTEM,
    HTTP_ROUTE,
    INPUT_VALUE,
    KIND_AGENT,
    KIND_CHAIN,
    KIND_LLM,
    KIND_RERANKER,
    KIND_RETRIEVER,
    LLM_INPUT_MESSAGES,
    LLM_MODEL_NAME,
    LLM_OPS,
    LLM_OUTPUT_MESSAGE_CONTENT,
    LLM_PROVIDER,
    LLM_TOKEN_COUNT_COMPLETION,
    LLM_TOKEN_COUNT_PROMPT,
    MESSAGE_CONTENT,
    MESSAGE_ROLE,
    OP_RERANK,
    OUTPUT_VALUE,
    RAG_CORPUS_VERSION,
    RAG_QUERY_TYPE,
    RAG_RISK_LEVEL,
    RAG_ROOT,
    RAG_VARIANT,
    RERANKER_OUTPUT_DOCUMENTS,
    RETRIEVAL_DOCUMENTS,
    RETRIEVAL_OPS,
    SESSION_ID,
    SPAN_KIND,
    USER_ID,
    document_key,
)
from .model import STATUS_ERROR, Chunk, Citation, RagTrace, Span

__all__ = ["build_trace", "span_role"]


_RETRIEVAL_OPS = frozenset(RETRIEVAL_OPS)
_LLM_OPS = frozenset(LLM_OPS)
# A span with documents but no kind or operation is a retrieval.
_FIRST_DOCUMENT = (
    document_key(RETRIEVAL_DOCUMENTS, 0, "content"),
    document_key(RETRIEVAL_DOCUMENTS, 0, "id"),
)


def _role(attrs: dict[str, Any]) -> str:
    """'retriever', 'reranker', 'llm', 'chain' or '' for a span's attributes."""
    kind = attrs.get(SPAN_KIND)
    if kind is not None:
        kind = str(kind).upper()
        if kind == KIND_RETRIEVER:
            return "retriever"
        if kind == KIND_RERANKER:
            return "reranker"
        if kind == KIND_LLM:
            return "llm"
        if kind in (KIND_CHAIN, KIND_AGENT):
            return "chain"
    op = attrs.get(GEN_AI_OPERATION)
    if op is not None:
        op = str(op)
        if op in _RETRIEVAL_OPS:
            return "retriever"
        if op in _LLM_OPS:
            return "llm"
        if op == OP_RERANK:
            return "reranker"
    if GEN_AI_SYSTEM in attrs or GEN_AI_REQUEST_MODEL in attrs or LLM_MODEL_NAME in attrs:
        return "llm"
    if _FIRST_DOCUMENT[0] in attrs or _FIRST_DOCUMENT[1] in attrs:
        return "retriever"
    return ""


def span_role(span: Span) -> str:
    """The span's RAG role ('retriever', 'reranker', 'llm', 'chain' or ''), computed once."""
    role = span.role
    if role is None:
        role = span.role = _role(span.attrs)
    return role


_DOC_KEYS: dict[tuple[str, int], tuple[str, str, str, str]] = {}


def _doc_keys(prefix: str, i: int) -> tuple[str, str, str, str]:
    """The id/content/score/metadata attribute keys of document ``i`` (built once, then cached)."""
    keys = _DOC_KEYS.get((prefix, i))
    if keys is None:
        keys = tuple(document_key(prefix, i, field) for field in DOCUMENT_FIELDS)
        if len(_DOC_KEYS) < 10_000:
            _DOC_KEYS[(prefix, i)] = keys
    return keys


def _documents(attrs: dict[str, Any], prefix: str) -> list[Chunk]:
    """Chunks from the documents under ``prefix`` (conventions.document_key) for i = 0, 1, ..."""
    chunks = []
    i = 0
    get = attrs.get
    while True:
        k_id, k_content, k_score, k_meta = _doc_keys(prefix, i)
        cid = get(k_id)
        content = get(k_content)
        if cid is None and content is None:
            break
        score = get(k_score)
        if score is not None and not isinstance(score, float):
            try:
                score = float(score)
            except (TypeError, ValueError):
                score = None
        meta = get(k_meta, "")
        if not isinstance(meta, str):
            meta = json.dumps(meta, default=str)
        chunks.append(
            Chunk(str(i if cid is None else cid), "" if content is None else str(content), score, meta)
        )
        i += 1
    return chunks


def _messages(attrs: dict[str, Any], prefix: str, role_key: str, content_key: str) -> list[tuple[str, str]]:
    msgs: dict[int, dict[str, str]] = {}
    plen = len(prefix)
    for key, value in attrs.items():
        if key.startswith(prefix):
            idx, _, field = key[plen:].partition(".")
            if idx.isdigit() and field in (role_key, content_key):
                msgs.setdefault(int(idx), {})[field] = str(value)
    return [(m.get(role_key, ""), m.get(content_key, "")) for _, m in sorted(msgs.items())]


def _last_user(msgs: list[tuple[str, str]]) -> str:
    for role, content in reversed(msgs):
        if role in ("user", "human", ""):
            return content
    return ""


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
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return low if n < low else high if n > high else n


def build_trace(trace_id: str, spans: list[Span]) -> RagTrace:
    """Turn one trace's spans into a :class:`RagTrace` (fields it cannot find stay empty)."""
    t = RagTrace(trace_id)
    t.span_count = len(spans)
    rag_root = trace_root = chain = None
    retrievers: list[Span] = []
    rerankers: list[Span] = []
    llms: list[Span] = []
    error = False
    first = spans[0]
    end_time = first.end
    for s in spans:
        a = s.attrs
        if s.status == STATUS_ERROR:
            error = True
        if a.get(RAG_ROOT):
            rag_root = s
        if not s.parent_id:
            trace_root = s
        if s.start < first.start:
            first = s
        if s.end > end_time:
            end_time = s.end
        role = span_role(s)
        if role == "retriever":
            retrievers.append(s)
        elif role == "reranker":
            rerankers.append(s)
        elif role == "llm":
            llms.append(s)
        elif role == "chain" and (chain is None or s.start < chain.start):
            chain = s
    root = rag_root or chain or trace_root
    if rag_root is None:
        t.source = "openinference" if any(SPAN_KIND in s.attrs for s in spans) else "gen_ai"
    t.time = (root or first).start
    t.end_time = end_time
    t.service = (root or first).service
    ra: dict[str, Any] = root.attrs if root is not None else {}
    t.latency_ms = _ms(root) if root is not None else (t.end_time - t.time) / 1e6
    t.query = str(ra.get(INPUT_VALUE, "") or "")
    t.answer = str(ra.get(OUTPUT_VALUE, "") or "")
    if llms:
        _read_generation(t, llms)
    if not t.query and retrievers:
        t.query = str(retrievers[0].attrs.get(INPUT_VALUE, "") or "")
    if rerankers:
        rr = max(rerankers, key=lambda s: s.end)
        t.chunks = _documents(rr.attrs, RERANKER_OUTPUT_DOCUMENTS)
        t.rerank_ms = _total_ms(rerankers)
    if retrievers:
        if not t.chunks:
            for r in sorted(retrievers, key=lambda s: s.start):
                t.chunks.extend(_documents(r.attrs, RETRIEVAL_DOCUMENTS))
        t.retrieval_ms = _total_ms(retrievers)
    if root is not None:
        t.citations = _citations(root)
    _read_root(t, ra, trace_root)
    t.status = "error" if error else "ok"
    return t


def _read_generation(t: RagTrace, llms: list[Span]) -> None:
    """The fields the LLM spans give: from the last one to end the model, provider and (when
    the root lacks them) answer and query; from all of them the tokens and the time."""
    la = max(llms, key=lambda s: s.end).attrs
    if not t.answer:
        t.answer = str(
            la.get(OUTPUT_VALUE)
            or la.get(LLM_OUTPUT_MESSAGE_CONTENT)
            or la.get(GEN_AI_COMPLETION_CONTENT)
            or ""
        )
    if not t.query:
        t.query = _last_user(_messages(la, LLM_INPUT_MESSAGES, MESSAGE_ROLE, MESSAGE_CONTENT)) or _last_user(
            _messages(la, GEN_AI_PROMPT, GEN_AI_ROLE, GEN_AI_CONTENT)
        )
    t.model = str(
        la.get(GEN_AI_REQUEST_MODEL) or la.get(GEN_AI_RESPONSE_MODEL) or la.get(LLM_MODEL_NAME) or ""
    )
    t.provider = str(la.get(GEN_AI_PROVIDER) or la.get(GEN_AI_SYSTEM) or la.get(LLM_PROVIDER) or "")
    t.input_tokens = min(
        _TOKENS_MAX,
        sum(_int(s.attrs.get(GEN_AI_INPUT_TOKENS, s.attrs.get(LLM_TOKEN_COUNT_PROMPT))) for s in llms),
    )
    t.output_tokens = min(
        _TOKENS_MAX,
        sum(_int(s.attrs.get(GEN_AI_OUTPUT_TOKENS, s.attrs.get(LLM_TOKEN_COUNT_COMPLETION))) for s in llms),
    )
    t.generation_ms = _total_ms(llms)


def _citations(root: Span) -> list[Citation]:
    """The root span's citation events, in order."""
    return [
        Citation(
            str(ea.get(CITATION_DOCUMENT_ID, "")),
            str(ea.get(CITATION_MARKER, "")),
            _int(ea.get(CITATION_START, -1), -1, _POSITION_MAX),
            _int(ea.get(CITATION_END, -1), -1, _POSITION_MAX),
        )
        for name, _ts, ea in root.events
        if name == CITATION_EVENT
    ]


def _read_root(t: RagTrace, ra: dict[str, Any], trace_root: Span | None) -> None:
    """The fields the root span's attributes give (the route also from the trace's own root)."""
    t.corpus_version = str(ra.get(RAG_CORPUS_VERSION, "") or "")
    t.risk_level = str(ra.get(RAG_RISK_LEVEL, "") or "")
    t.query_type = str(ra.get(RAG_QUERY_TYPE, "") or "")
    t.variant = str(ra.get(RAG_VARIANT, "") or "")
    t.session_id = str(ra.get(SESSION_ID, "") or "")
    t.user_id = str(ra.get(USER_ID, "") or "")
    route = ra.get(HTTP_ROUTE)
    if route is None and trace_root is not None:
        route = trace_root.attrs.get(HTTP_ROUTE)
    t.route = str(route or "")
    attributes = dict(ra)
    attributes.pop(INPUT_VALUE, None)
    attributes.pop(OUTPUT_VALUE, None)
    t.attributes = attributes
