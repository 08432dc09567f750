"""Expanding side records into the span conventions (export thread, off the request path).

Given a finished span with a record attached, build the final attributes and
``rag.citation`` events (DESIGN.md "Span conventions"), apply the limits
(truncation is flagged with ``rag.truncated`` and ``rag.truncated.fields``)
and redaction. The span leaves with these attributes and events: on a copy
(:func:`copy_span`, the plain ``ReadableSpan`` any OTel exporter understands),
or written straight into OTLP by the agent's own exporters. Redaction is
applied to every string attribute and event attribute of every span that
passes through, not only ragpulse's own.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan

from .answer_sources import answer_chunk_ids, given_ids, retrieved_chunks
from .chunks import Chunk
from .citations import Citation, answer_text, citations_from_structured, parse_citations
from .config import Limits, Settings
from .conventions import (
    CITATION_DOCUMENT_ID,
    CITATION_END,
    CITATION_EVENT,
    CITATION_MARKER,
    CITATION_START,
    DOCUMENT_FIELDS,
    DOCUMENT_SOURCE,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_REQUEST_TOP_K,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_RETRIEVAL_DOCUMENTS,
    GEN_AI_RETRIEVAL_QUERY,
    GENERATION_DOCUMENTS,
    INPUT_VALUE,
    KIND_CHAIN,
    KIND_LLM,
    KIND_RERANKER,
    KIND_RETRIEVER,
    LLM_MODEL_NAME,
    LLM_PROVIDER,
    LLM_TOKEN_COUNT_COMPLETION,
    LLM_TOKEN_COUNT_PROMPT,
    OP_CHAT,
    OP_RETRIEVAL,
    OUTPUT_VALUE,
    RAG_CITATION_COUNT,
    RAG_CORPUS_VERSION,
    RAG_DOCUMENTS_COUNT,
    RAG_ROOT,
    RAG_STREAM,
    RAG_STREAM_CLOSED_EARLY,
    RAG_TRUNCATED,
    RAG_TRUNCATED_FIELDS,
    RAG_VARIANT,
    RERANKER_OUTPUT_DOCUMENTS,
    RETRIEVAL_DOCUMENTS,
    SPAN_KIND,
    config_key,
    document_key,
)
from .conversation import split_turns
from .conversation_attrs import conversation_attributes
from .once import Once
from .outputs import get as _get
from .outputs import joined_text, output_text, to_json, usage_tokens
from .records import AgentRecord, GenerationRecord, RagRecord, Record, RetrievalRecord, ToolRecord
from .redaction import Redactor
from .steps import agent_attributes, tool_attributes

__all__ = ["Materializer", "copy_span", "output_text", "usage_tokens"]

_log = logging.getLogger("ragpulse.agent")
_first = Once()
_DOCUMENT_ID = DOCUMENT_FIELDS[0]
_ROOT_ATTRIBUTES = 16  # the most a root span writes besides its conversation and the application's


def _conversation_failed() -> None:
    if _first("conversation"):
        _log.exception(
            "ragpulse: the conversation of a RAG call could not be read; its root span goes without it"
        )


_GEN_AI_DOC_KEYS = ("id", "score")  # the GenAI retrieval document beside the flattened form
# Under an application's provider these are written last: a provider that drops its oldest
# attributes when over its limit drops them last (the last one here is the most protected).
_PROTECTED = (
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_RETRIEVAL_DOCUMENTS,
    OUTPUT_VALUE,
    INPUT_VALUE,
    RAG_ROOT,
    GEN_AI_OPERATION,
    SPAN_KIND,
)


def _decoded_metadata(doc: dict[str, Any]) -> dict[str, Any]:
    """A document for the JSON form: its metadata as an object again, not JSON text in JSON."""
    meta = doc.get("metadata")
    if meta is None:
        return doc
    try:
        return {**doc, "metadata": json.loads(meta)}
    except ValueError:  # cut by max_metadata_chars: keep the text
        return doc


@functools.lru_cache(maxsize=4096)
def _document_keys(prefix: str, index: int) -> dict[str, str]:
    """Field -> attribute key of document ``index`` (the same keys for every retrieval)."""
    return {field: document_key(prefix, index, field) for field in (*DOCUMENT_FIELDS, DOCUMENT_SOURCE)}


class _Ctx:
    """Per-span scratch: output attributes, the truncation flags raised and, under the
    application's provider, the attribute room and value length the span has."""

    __slots__ = ("attrs", "truncated", "room", "max_len")

    def __init__(self, attrs: dict[str, Any], room: int | None = None, max_len: int | None = None):
        self.attrs = attrs
        self.truncated: list[str] = []
        self.room = room
        self.max_len = max_len


class Materializer:
    """Builds final spans from records; one per configuration, used by the export thread."""

    def __init__(self, settings: Settings):
        self.limits: Limits = settings.limits
        self.capture = settings.capture_content
        # What configure(corpus_version=, variant=, config=) puts on every root span that does
        # not carry its own value (from the decorator, a handle or the application).
        self.root_defaults: dict[str, Any] = {config_key(k): v for k, v in dict(settings.config).items()}
        if settings.variant:
            self.root_defaults[RAG_VARIANT] = settings.variant
        if settings.corpus_version:
            self.root_defaults[RAG_CORPUS_VERSION] = settings.corpus_version
        self.redactor: Redactor | None = None
        if settings.redact or settings.redactor is not None:
            self.redactor = Redactor(builtin=settings.redact, custom=settings.redactor)

    # -- helpers -------------------------------------------------------------------------------
    def _text(self, ctx: _Ctx, value: str, limit: int, flag: str) -> str:
        """Redact then truncate (redacting first so a secret cut in half cannot leak)."""
        if len(value) > 2 * limit:
            value = value[: 2 * limit]
        if self.redactor is not None:
            value = self.redactor(value)
        if len(value) > limit:
            value = value[:limit]
            if flag not in ctx.truncated:
                ctx.truncated.append(flag)
        return value

    def _input(self, ctx: _Ctx, value: Any) -> None:
        if value is None or not self.capture:
            return
        text = value if isinstance(value, str) else to_json(value)
        ctx.attrs[INPUT_VALUE] = self._text(ctx, text, self.limits.max_query_chars, "query")

    def _scrubber(self, ctx: _Ctx) -> Callable[[str, int, str], str]:
        """:meth:`_text` for one span, as the modules that write conversations and steps take it."""
        return lambda value, limit, flag: self._text(ctx, value, limit, flag)

    # -- per kind --------------------------------------------------------------------------------
    def _retrieval(self, ctx: _Ctx, rec: RetrievalRecord) -> None:
        attrs = ctx.attrs
        chunks = retrieved_chunks(rec)
        count = len(chunks)
        if count > self.limits.max_chunks:
            chunks = chunks[: self.limits.max_chunks]
            ctx.truncated.append("chunks")
        docs = [self._document(ctx, c) for c in chunks]
        # Under the application's provider (ctx.room set) the span keeps a bounded number of
        # attributes: when the flattened form would not fit, every document goes into the one
        # gen_ai.retrieval.documents attribute instead (content and metadata included).
        flat = sum(len(d) for d in docs)
        if ctx.room is not None and flat + 8 + (len(rec.attrs) if rec.attrs else 0) > ctx.room:
            attrs[GEN_AI_RETRIEVAL_DOCUMENTS] = self._fitted_json(ctx, docs)
        else:
            self._flattened(ctx, docs, RERANKER_OUTPUT_DOCUMENTS if rec.reranker else RETRIEVAL_DOCUMENTS)
            if not rec.reranker:
                attrs[GEN_AI_RETRIEVAL_DOCUMENTS] = to_json(
                    [{k: d[k] for k in _GEN_AI_DOC_KEYS if k in d} for d in docs]
                )
        attrs[RAG_DOCUMENTS_COUNT] = count
        if isinstance(rec.top_k, int) and not isinstance(rec.top_k, bool):
            attrs[GEN_AI_REQUEST_TOP_K] = rec.top_k
        self._input(ctx, rec.input)
        if not rec.reranker and INPUT_VALUE in attrs:
            attrs[GEN_AI_RETRIEVAL_QUERY] = attrs[INPUT_VALUE]
        attrs[SPAN_KIND] = KIND_RERANKER if rec.reranker else KIND_RETRIEVER
        if not rec.reranker:
            attrs[GEN_AI_OPERATION] = OP_RETRIEVAL

    def _document(self, ctx: _Ctx, chunk: Chunk) -> dict[str, Any]:
        """One chunk's fields as they are written (limited and redacted), by DOCUMENT_FIELDS name."""
        limits = self.limits
        doc: dict[str, Any] = {"id": chunk.id}
        if self.capture:
            doc["content"] = self._text(ctx, chunk.content, limits.max_chunk_chars, "chunk.content")
        if chunk.score is not None:
            doc["score"] = chunk.score
        if chunk.metadata:
            doc["metadata"] = self._text(
                ctx, to_json(chunk.metadata), limits.max_metadata_chars, "chunk.metadata"
            )
        if chunk.source is not None:
            doc[DOCUMENT_SOURCE] = chunk.source
        return doc

    def _flattened(self, ctx: _Ctx, docs: list[dict[str, Any]], prefix: str) -> None:
        """The OpenInference form; under an application provider the last document first, so
        that a provider dropping its oldest attributes drops the last documents, never the first."""
        attrs = ctx.attrs
        order = range(len(docs) - 1, -1, -1) if ctx.room is not None else range(len(docs))
        for i in order:
            keys = _document_keys(prefix, i)
            for field, value in docs[i].items():
                attrs[keys.get(field) or document_key(prefix, i, field)] = value

    def _fitted_json(self, ctx: _Ctx, docs: list[dict[str, Any]]) -> str:
        """The documents as one JSON array, cut to whole documents that fit the provider's value
        length limit (a cut JSON text would not parse)."""
        text = to_json([_decoded_metadata(d) for d in docs])
        if ctx.max_len is None or len(text) <= ctx.max_len:
            return text
        kept = len(docs)
        while kept > 0 and len(text) > ctx.max_len:
            kept -= 1
            text = to_json([_decoded_metadata(d) for d in docs[:kept]])
        ctx.truncated.append("chunks")
        return text

    def _rag(self, ctx: _Ctx, rec: RagRecord, end_time: int | None, events: list[Event]) -> None:
        attrs = ctx.attrs
        attrs[SPAN_KIND] = KIND_CHAIN
        attrs[RAG_ROOT] = True
        self._conversation(ctx, rec)
        result = rec.answer
        if rec.parts is not None:
            result = joined_text(rec.parts)
            attrs[RAG_STREAM] = True
        text = answer_text(result)
        if text is None and result is not None:
            text = output_text(result)
        if text is None and isinstance(result, (int, float, bool)):
            text = str(result)  # other unknown objects (awaitables, iterators, models) are not guessed at
        final = ""
        if text is not None:
            final = self._text(ctx, text, self.limits.max_answer_chars, "answer")
            if self.capture:
                attrs[OUTPUT_VALUE] = final
        chunk_ids = answer_chunk_ids(rec, text)
        citations: list[Citation] = []
        structured = citations_from_structured(rec.answer, chunk_ids) if rec.parts is None else None
        if structured:
            citations.extend(structured)
        elif final:
            citations.extend(parse_citations(final, chunk_ids))
        for doc, start, end, marker in rec.citations or ():
            citations.append(self._explicit(doc, start, end, marker, text, final, chunk_ids))
        attrs[RAG_CITATION_COUNT] = len(citations)
        for cit in citations:
            ev: dict[str, Any] = {CITATION_DOCUMENT_ID: cit.doc_id}
            if cit.marker:
                ev[CITATION_MARKER] = cit.marker
            if cit.start >= 0 and cit.end >= 0:
                ev[CITATION_START] = cit.start
                ev[CITATION_END] = cit.end
            events.append(Event(CITATION_EVENT, ev, timestamp=end_time))

    def _conversation(self, ctx: _Ctx, rec: RagRecord) -> None:
        """The current turn as ``input.value``, the turns before it as the conversation attributes."""
        query, messages, count = rec.input, [], 0
        try:
            query, messages, count = split_turns(rec.input, rec.conversation, self.limits.max_messages)
            # Under the application's provider the root's own attributes need room beside the messages.
            room = None if ctx.room is None else ctx.room - _ROOT_ATTRIBUTES - len(rec.attrs or ())
            ctx.attrs.update(
                conversation_attributes(
                    messages,
                    count,
                    self._scrubber(ctx),
                    self.limits,
                    ctx.truncated,
                    self.capture,
                    room,
                    ctx.max_len,
                )
            )
        except Exception:  # noqa: BLE001 - an unreadable history must not cost the answer its span
            _conversation_failed()
        self._input(ctx, query)

    def _explicit(
        self,
        doc: Any,
        start: int | None,
        end: int | None,
        marker: str | None,
        raw: str | None,
        final: str,
        ids: Any,
    ) -> Citation:
        doc_id = str(doc)
        if isinstance(doc, int) and ids and 1 <= doc <= len(ids):
            doc_id = ids[doc - 1]
        if start is None or end is None:
            return Citation(doc_id, marker or "", -1, -1)
        if raw is not None and final != raw[: len(final)] and self.redactor is not None:
            # Redaction changed lengths: map offsets through the redacted prefix.
            new_start = len(self.redactor(raw[:start]))
            end = new_start + len(self.redactor(raw[start:end]))
            start = new_start
        return Citation(doc_id, marker or "", min(start, len(final)), min(end, len(final)))

    def _generation(self, ctx: _Ctx, rec: GenerationRecord) -> None:
        attrs = ctx.attrs
        attrs[SPAN_KIND] = KIND_LLM
        attrs[GEN_AI_OPERATION] = OP_CHAT
        output = rec.output
        model = rec.model
        response_model = _get(output, "model") if output is not None and not isinstance(output, str) else None
        if model is None and isinstance(response_model, str):
            model = response_model
        if model:
            attrs[GEN_AI_REQUEST_MODEL] = model
            attrs[LLM_MODEL_NAME] = model
        if isinstance(response_model, str):
            attrs[GEN_AI_RESPONSE_MODEL] = response_model
        if rec.provider:
            attrs[GEN_AI_PROVIDER] = rec.provider
            attrs[LLM_PROVIDER] = rec.provider
        self._input(ctx, rec.input)
        if rec.documents:
            self._given(ctx, rec)
        if rec.parts is not None:
            text = joined_text(rec.parts)
            attrs[RAG_STREAM] = True
            usage_src = rec.usage
            if usage_src is None:
                for part in reversed(rec.parts):
                    if _get(part, "usage") is not None if not isinstance(part, str) else False:
                        usage_src = part
                        break
        else:
            text = output_text(output)
            usage_src = rec.usage if rec.usage is not None else output
        inp, out = usage_tokens(usage_src)
        if inp is not None:
            attrs[GEN_AI_INPUT_TOKENS] = inp
            attrs[LLM_TOKEN_COUNT_PROMPT] = inp
        if out is not None:
            attrs[GEN_AI_OUTPUT_TOKENS] = out
            attrs[LLM_TOKEN_COUNT_COMPLETION] = out
        if text is not None and self.capture:
            attrs[OUTPUT_VALUE] = self._text(ctx, text, self.limits.max_answer_chars, "output")

    def _given(self, ctx: _Ctx, rec: GenerationRecord) -> None:
        """``rag.generation.documents.<i>.document.id``: the chunks the generation was given."""
        ids = given_ids(rec)
        keep = min(len(ids), self.limits.max_chunks)
        if ctx.room is not None:
            keep = min(keep, max(ctx.room - 16 - (len(rec.attrs) if rec.attrs else 0), 0))
        if keep < len(ids):
            ctx.truncated.append("generation.documents")
        for i in range(keep):
            ctx.attrs[document_key(GENERATION_DOCUMENTS, i, _DOCUMENT_ID)] = ids[i]

    def _step(self, ctx: _Ctx, rec: ToolRecord | AgentRecord) -> None:
        write = tool_attributes if isinstance(rec, ToolRecord) else agent_attributes
        ctx.attrs.update(write(rec, self._scrubber(ctx), self.limits, self.capture))  # type: ignore[arg-type]

    # -- entry points ----------------------------------------------------------------------------
    def expand(
        self,
        record: Record,
        base: Mapping[str, Any] | None,
        end_time: int | None,
        room: int | None = None,
        max_len: int | None = None,
        own: Mapping[str, Any] | None = None,
    ) -> tuple[dict, list[Event]]:
        """Attributes and new events for ``record`` (``base``: attributes already on the span).

        ``room`` / ``max_len``: the attributes the span can still take and the longest value the
        provider keeps (spans under the application's provider; None for the agent's own).
        ``own``: attributes on the span that the configured root defaults leave alone.
        """
        attrs: dict[str, Any] = dict(base) if base else {}
        ctx = _Ctx(attrs, room, max_len)
        events: list[Event] = []
        if isinstance(record, RagRecord):
            self._rag(ctx, record, end_time, events)
            for key, value in self.root_defaults.items():
                if key not in attrs and not (own and key in own):
                    attrs[key] = value
        elif isinstance(record, RetrievalRecord):
            self._retrieval(ctx, record)
        elif isinstance(record, GenerationRecord):
            self._generation(ctx, record)
        elif isinstance(record, (ToolRecord, AgentRecord)):
            self._step(ctx, record)
        if record.attrs:
            for key, value in record.attrs.items():
                if not isinstance(value, (str, bool, int, float)):
                    value = to_json(value)
                attrs[key] = self._scrub_value(ctx, value)
        if record.stream_closed:
            attrs[RAG_STREAM_CLOSED_EARLY] = True
        self._flag(ctx)
        if room is not None:
            for key in _PROTECTED:
                if key in attrs:
                    attrs[key] = attrs.pop(key)
        return attrs, events

    @staticmethod
    def _flag(ctx: _Ctx) -> None:
        if ctx.truncated:
            ctx.attrs[RAG_TRUNCATED] = True
            ctx.attrs[RAG_TRUNCATED_FIELDS] = tuple(ctx.truncated)

    def _scrub_value(self, ctx: _Ctx, value: Any) -> Any:
        """Limit and redact one attribute value set by the application (or another instrumentation)."""
        if isinstance(value, str):
            return self._text(ctx, value, self.limits.max_attribute_chars, "attribute")
        if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
            return tuple(self._scrub_value(ctx, v) for v in value)
        return value

    def _scrub(self, ctx: _Ctx, attrs: Mapping[str, Any] | None) -> dict[str, Any]:
        return {k: self._scrub_value(ctx, v) for k, v in (attrs or {}).items()}

    def finalize(self, span: ReadableSpan, record: Record | None) -> tuple[dict[str, Any], list[Event]]:
        """The attributes and events ``span`` leaves the process with: record expanded, limits and
        redaction applied (:func:`copy_span` puts them on a copy; an encoder needs no copy)."""
        events = list(span.events)
        # Attributes already on the span (set by the application or other instrumentation) are
        # limited and redacted too; ours come out of expand() already limited and redacted.
        ctx = _Ctx({})
        merged = self._scrub(ctx, span.attributes)
        if record is not None:
            attrs, new_events = self.expand(record, None, span.end_time, own=span.attributes)
            if ctx.truncated and attrs.get(RAG_TRUNCATED):
                ctx.truncated.extend(f for f in attrs[RAG_TRUNCATED_FIELDS] if f not in ctx.truncated)
            merged.update(attrs)
            events.extend(new_events)
        if self.redactor is not None:
            events = [Event(e.name, self._scrub(ctx, e.attributes), e.timestamp) for e in events]
        if ctx.truncated:
            ctx.attrs = merged
            self._flag(ctx)
        return merged, events


def copy_span(span: ReadableSpan, attributes: Mapping[str, Any], events: Sequence[Event]) -> ReadableSpan:
    """``span`` with its attributes and events replaced (finished spans are immutable)."""
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
