"""A trace's evidence: every retrieval's chunks with the query that fetched them, then tool results.

Retrieval and reranker spans are read in the order they started: a retrieval's chunks are
added to those before it, a reranker's output takes the place of everything retrieved before
it (as the agent resolves citation markers, ``agent/answer_sources.py``; a reranker that
recorded no output leaves them). Each chunk carries
the query of the retrieval that fetched it (``gen_ai.retrieval.query.text``, ``input.value``,
OpenLLMetry's input; a reranked chunk keeps its retrieval's query, else the reranker's), so a
rewritten or decomposed query stays beside its chunks.

A tool call (OTel GenAI ``execute_tool``, OpenInference ``TOOL``) becomes one chunk after the
retrieved ones: its result as the content (``gen_ai.tool.call.result``, else ``output.value``),
``source_type`` ``tool``, the tool's name, its arguments as the chunk's query and its call id
as the chunk's id (``<tool name>#<k>`` without one). A LangChain tool's result recorded as the
serialized ``ToolMessage`` its tool node made gives that message's content and call id, and
OpenLLMetry's wrapped tool input its arguments (:mod:`.framework_values`). A tool call without a result, or one that
wraps a retrieval (a retriever exposed as a tool: its documents are already there), adds none.

:func:`marker_ids` says which chunk ids an answer's ``[n]`` markers count through: the chunks
the generation that wrote the answer was given (``rag.generation.documents``), else the
retrieved chunks in retrieval order.
"""

from __future__ import annotations

from typing import Any

from ...agent.conventions import (
    DOCUMENT_FIELDS,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GENERATION_DOCUMENTS,
    INPUT_VALUE,
    OP_EXECUTE_TOOL,
    OUTPUT_VALUE,
    RERANKER_OUTPUT_DOCUMENTS,
    TOOL_NAME,
    document_key,
)
from ..contract import SOURCE_TOOL
from ..core.model import Chunk, Span
from .documents import span_documents
from .framework_values import tool_arguments, tool_message
from .texts import llm_answer, retrieval_query

__all__ = ["retrieved_chunks", "tool_chunks", "marker_ids", "given_ids"]

_TOOL_SPAN_PREFIX = f"{OP_EXECUTE_TOOL} "
_GIVEN_ID = DOCUMENT_FIELDS[0]  # the one field of a given document: the id its retrieval span wrote


def _by_start(span: Span) -> int:
    return span.start


def retrieved_chunks(retrievers: list[Span], rerankers: list[Span]) -> list[Chunk]:
    """The chunks of the retrievals and rerankers, each with its query (module docstring)."""
    if not rerankers:
        if len(retrievers) == 1:  # the common case: one retrieval (_with_query inlined)
            docs = span_documents(retrievers[0].attrs)
            query = retrieval_query(retrievers[0].attrs) if docs else ""
            if query:
                for c in docs:
                    c.query = query
            return docs
        chunks: list[Chunk] = []
        for r in sorted(retrievers, key=_by_start):
            chunks.extend(_with_query(span_documents(r.attrs), r))
        return chunks
    last = max(rerankers, key=_by_start)
    output = span_documents(last.attrs, RERANKER_OUTPUT_DOCUMENTS)
    if not output:
        return _in_order(retrievers, rerankers)
    before = [r for r in retrievers if r.start <= last.start]
    if len(before) == 1:  # the common case: retrieve, then rerank; no need to read what was replaced
        query = retrieval_query(before[0].attrs) or retrieval_query(last.attrs)
        for c in output:
            c.query = query
    else:
        _reranked(output, last, _in_order(before, [r for r in rerankers if r is not last]))
    for r in sorted((r for r in retrievers if r.start > last.start), key=_by_start):
        output.extend(_with_query(span_documents(r.attrs), r))
    return output


def _in_order(retrievers: list[Span], rerankers: list[Span]) -> list[Chunk]:
    """Every step in start order: a retrieval's chunks added, a reranker's output in place of
    what came before it (one that recorded none leaves it)."""
    reranker_ids = {id(s) for s in rerankers}
    chunks: list[Chunk] = []
    for s in sorted([*retrievers, *rerankers], key=_by_start):
        if id(s) in reranker_ids:
            chunks = _reranked(span_documents(s.attrs, RERANKER_OUTPUT_DOCUMENTS), s, chunks)
        else:
            chunks.extend(_with_query(span_documents(s.attrs), s))
    return chunks


def _with_query(chunks: list[Chunk], span: Span) -> list[Chunk]:
    """``chunks`` of the retrieval ``span``, each given its query."""
    if chunks:
        query = retrieval_query(span.attrs)
        if query:
            for c in chunks:
                c.query = query
    return chunks


def _reranked(output: list[Chunk], span: Span, before: list[Chunk]) -> list[Chunk]:
    """A reranker's output documents, each with the query of the retrieved chunk it is (by
    the retriever's id), else the reranker's own query; ``before`` when it recorded none."""
    if not output:
        return before
    queries = {c.source: c.query for c in before if c.query}
    own = retrieval_query(span.attrs) if len(queries) < len(output) else ""
    for c in output:
        c.query = queries.get(c.source) or queries.get(c.id) or own
    return output


def _tool_name(span: Span) -> str:
    a = span.attrs
    name = a.get(GEN_AI_TOOL_NAME) or a.get(TOOL_NAME)
    if name:
        return str(name)
    return span.name[len(_TOOL_SPAN_PREFIX) :] if span.name.startswith(_TOOL_SPAN_PREFIX) else span.name


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def tool_chunks(tools: list[Span], retrievers: list[Span], spans: list[Span]) -> list[Chunk]:
    """One chunk per tool call that returned something, in the order the calls started
    (``spans``: the whole trace, to find the retrievals inside a tool call)."""
    wraps = _wrapping_retrievals(tools, retrievers, spans) if retrievers else set()
    seen: dict[str, int] = {}
    out = []
    for s in sorted(tools, key=_by_start):
        if s.span_id in wraps:
            continue
        a = s.attrs
        result = _text(a.get(GEN_AI_TOOL_CALL_RESULT, a.get(OUTPUT_VALUE)))
        call_id = _text(a.get(GEN_AI_TOOL_CALL_ID))
        message = tool_message(result) if result else None
        if message is not None:  # a LangChain tool node's ToolMessage: the tool's own result
            result, call_id = message[0], call_id or message[1]
        if not result:
            continue
        name = _tool_name(s)
        seen[name] = seen.get(name, 0) + 1
        arguments = tool_arguments(_text(a.get(GEN_AI_TOOL_CALL_ARGUMENTS, a.get(INPUT_VALUE))))
        cid = call_id or f"{name}#{seen[name]}"
        out.append(Chunk(cid, result, None, "", None, SOURCE_TOOL, name, arguments))
    return out


def _wrapping_retrievals(tools: list[Span], retrievers: list[Span], spans: list[Span]) -> set[str]:
    """The span ids of the tool calls with a retrieval inside them (their result is its documents)."""
    tool_ids = {s.span_id for s in tools}
    parents = {s.span_id: s.parent_id for s in spans}
    out = set()
    for r in retrievers:
        parent, seen = r.parent_id, set()
        while parent and parent not in seen:  # seen: a malformed trace may hold a parent cycle
            seen.add(parent)
            if parent in tool_ids:
                out.add(parent)
            parent = parents.get(parent, "")
    return out


def given_ids(span: Span) -> list[str]:
    """The ids of the chunks a generation span was given, in its order (``rag.generation.documents``)."""
    get = span.attrs.get
    out = []
    i = 0
    while True:
        cid = get(document_key(GENERATION_DOCUMENTS, i, _GIVEN_ID))
        if cid is None:
            return out
        out.append(_text(cid))
        i += 1


def marker_ids(llms: list[Span], chunks: list[Chunk], answer: str) -> list[str]:
    """The chunk ids an answer's ``[n]`` markers count through (module docstring): the writer is
    the latest generation given chunks whose output the answer is (equal, inside or around
    it), else the latest generation given chunks."""
    given = [(s, ids) for s in sorted(llms, key=lambda s: s.end) if (ids := given_ids(s))]
    if given:
        target = answer.strip()
        for s, ids in reversed(given):
            text = llm_answer(s).strip()
            if text and target and (text == target or text in target or target in text):
                return ids
        return given[-1][1]
    return [c.id for c in chunks if c.source_type != SOURCE_TOOL]
