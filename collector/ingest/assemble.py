"""Assemble RAG traces from spans that arrive in any order and in separate records.

Spans are buffered per trace id. A trace is complete as soon as its root
(the span without a parent), a retrieval span and a generation span have all
arrived; otherwise it is emitted when ``timeout_s`` has passed since its first
span (a trace without any RAG span is then dropped and counted as non-RAG).
The buffer is bounded: when it holds ``max_traces`` traces the oldest is
emitted early. Spans arriving for a trace that was already emitted are
counted as late. Feedback spans (``rag.feedback``, written after the call,
often long after) are never buffered or counted as late: :meth:`Assembler.add`
sets them aside for the feedback sink (:meth:`Assembler.take_feedback`).

For at-least-once delivery the assembler remembers, per trace, the earliest
source position (Kafka partition, offset) that contributed a span, so the
consumer never commits past a record whose spans are still buffered.

:func:`build_trace` turns a trace's spans into a :class:`RagTrace` and
understands ragpulse spans, OpenInference spans (LangChain / LlamaIndex
instrumentors) and gen_ai spans (OpenLLMetry and the OTel GenAI conventions).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from ..feedback.spans import is_feedback_span
from .model import STATUS_ERROR, Chunk, Citation, RagTrace, Span

__all__ = ["Assembler", "Assembled", "build_trace", "is_rag_span", "span_role"]

_KIND = "openinference.span.kind"
_OP = "gen_ai.operation.name"
_RETRIEVAL_OPS = {"retrieval", "retrieve", "search"}
_LLM_OPS = {"chat", "text_completion", "generate_content", "completion"}


def _role(attrs: dict[str, Any]) -> str:
    """'retriever', 'reranker', 'llm', 'chain' or '' for a span's attributes."""
    kind = attrs.get(_KIND)
    if kind is not None:
        kind = str(kind).upper()
        if kind == "RETRIEVER":
            return "retriever"
        if kind == "RERANKER":
            return "reranker"
        if kind == "LLM":
            return "llm"
        if kind in ("CHAIN", "AGENT"):
            return "chain"
    op = attrs.get(_OP)
    if op is not None:
        op = str(op)
        if op in _RETRIEVAL_OPS:
            return "retriever"
        if op in _LLM_OPS:
            return "llm"
        if op == "rerank":
            return "reranker"
    if "gen_ai.system" in attrs or "gen_ai.request.model" in attrs or "llm.model_name" in attrs:
        return "llm"
    if "retrieval.documents.0.document.content" in attrs or "retrieval.documents.0.document.id" in attrs:
        return "retriever"
    return ""


def span_role(span: Span) -> str:
    """The span's RAG role ('retriever', 'reranker', 'llm', 'chain' or ''), computed once."""
    role = span.role
    if role is None:
        role = span.role = _role(span.attrs)
    return role


def is_rag_span(span: Span) -> bool:
    """True for spans that make a trace a RAG trace."""
    return bool(span.attrs.get("rag.root")) or span_role(span) in ("retriever", "reranker", "llm")


class _Pending:
    __slots__ = ("spans", "first_seen", "positions", "last", "has_root", "has_retrieval", "has_llm", "is_rag")

    def __init__(self, now: float) -> None:
        self.spans: list[Span] = []
        self.first_seen = now
        self.positions: dict[Any, int] = {}
        self.last: tuple[Any, int] | None = None
        self.has_root = False
        self.has_retrieval = False
        self.has_llm = False
        self.is_rag = False


class Assembled:
    """A trace leaving the assembler: its spans, whether the completion rule fired, and its positions."""

    __slots__ = ("trace_id", "spans", "complete", "is_rag", "positions", "last", "trace")

    def __init__(
        self,
        trace_id: str,
        spans: list[Span],
        complete: bool,
        is_rag: bool,
        positions: dict[Any, int],
        last: tuple[Any, int] | None = None,
    ) -> None:
        self.trace_id = trace_id
        self.spans = spans
        self.complete = complete
        self.is_rag = is_rag
        self.positions = positions
        self.last = last  # (partition, offset) of the last record that fed this trace
        self.trace: RagTrace | None = None  # built early (Ingestor.build) so the spans can be freed


class Assembler:
    """A bounded buffer of partial traces (see the module docstring)."""

    def __init__(self, timeout_s: float = 5.0, max_traces: int = 50_000, recent: int = 200_000) -> None:
        self.timeout_s = timeout_s
        self.max_traces = max_traces
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._ready: list[Assembled] = []
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._recent_max = recent
        self.late_spans = 0
        self.evicted = 0
        self.feedback: list[Span] = []

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, spans: list[Span], position: tuple[Any, int] | None, now: float) -> None:
        """Buffer ``spans`` that came from one record at ``position`` ((partition, offset) or None)."""
        pending = self._pending
        touched: dict[str, _Pending] = {}
        for span in spans:
            if is_feedback_span(span):
                self.feedback.append(span)
                continue
            tid = span.trace_id
            p = pending.get(tid)
            if p is None:
                if tid in self._recent:
                    self.late_spans += 1
                    continue
                p = _Pending(now)
                pending[tid] = p
            p.spans.append(span)
            if not span.parent_id:
                p.has_root = True
            role = span_role(span)
            if role == "retriever":
                p.has_retrieval = True
                p.is_rag = True
            elif role == "llm":
                p.has_llm = True
                p.is_rag = True
            elif role == "reranker" or span.attrs.get("rag.root"):
                p.is_rag = True
            touched[tid] = p
        for tid, p in touched.items():
            if position is not None:
                part, off = position
                old = p.positions.get(part)
                if old is None or off < old:
                    p.positions[part] = off
                if p.last is None or off > p.last[1]:
                    p.last = position
            if p.has_root and p.has_retrieval and p.has_llm:
                self._emit(tid, complete=True)
        while len(pending) > self.max_traces:
            tid = next(iter(pending))
            self.evicted += 1
            self._emit(tid, complete=False)

    def take_feedback(self) -> list[Span]:
        """The feedback spans set aside since the last call (for the feedback sink)."""
        out, self.feedback = self.feedback, []
        return out

    def add_built(self, traces: list[RagTrace], position: tuple[Any, int] | None) -> bool:
        """Take the traces the native fast path built from one record at ``position``.

        They are emitted as complete at once, as :meth:`add` would emit them had it been
        given their spans. Returns False, changing nothing, when a trace is already
        buffered or was emitted recently: :meth:`add` must then see the record's spans
        (to join them to the buffered ones, or count them as late).
        """
        pending = self._pending
        recent = self._recent
        for t in traces:
            if t.trace_id in pending or t.trace_id in recent:
                return False
        positions = {position[0]: position[1]} if position is not None else {}
        for t in traces:
            a = Assembled(t.trace_id, [], True, True, dict(positions), position)
            a.trace = t
            self._ready.append(a)
            recent[t.trace_id] = None
        while len(recent) > self._recent_max:
            recent.popitem(last=False)
        return True

    def _emit(self, tid: str, complete: bool) -> None:
        p = self._pending.pop(tid)
        self._ready.append(Assembled(tid, p.spans, complete, p.is_rag, p.positions, p.last))
        recent = self._recent
        recent[tid] = None
        if len(recent) > self._recent_max:
            recent.popitem(last=False)

    def pop_ready(self, now: float) -> list[Assembled]:
        """Complete traces plus those whose timeout expired, in emission order."""
        deadline = now - self.timeout_s
        pending = self._pending
        while pending:
            tid, p = next(iter(pending.items()))
            if p.first_seen > deadline:
                break
            self._emit(tid, complete=False)
        out, self._ready = self._ready, []
        return out

    def drain(self) -> list[Assembled]:
        """Emit everything buffered (used by an explicit flush and at shutdown in embedded mode)."""
        for tid in list(self._pending):
            self._emit(tid, complete=False)
        out, self._ready = self._ready, []
        return out

    def min_positions(self) -> dict[Any, int]:
        """Per partition, the smallest offset that still has buffered (unemitted) spans."""
        low: dict[Any, int] = {}
        for p in self._pending.values():
            for part, off in p.positions.items():
                cur = low.get(part)
                if cur is None or off < cur:
                    low[part] = off
        for a in self._ready:
            for part, off in a.positions.items():
                cur = low.get(part)
                if cur is None or off < cur:
                    low[part] = off
        return low

    def drop_partitions(self, partitions: set[Any]) -> int:
        """Forget buffered traces fed by revoked partitions (their new owner re-reads them)."""
        drop = [tid for tid, p in self._pending.items() if partitions & p.positions.keys()]
        for tid in drop:
            del self._pending[tid]
        return len(drop)

    def forget(self, trace_ids: Iterable[str]) -> None:
        """Stop treating these emitted traces as done, so their spans are assembled again
        when re-read (the caller discarded them unstored, e.g. on partition revocation)."""
        recent = self._recent
        for tid in trace_ids:
            recent.pop(tid, None)


# ---------------------------------------------------------------- building a RagTrace


_DOC_KEYS: dict[tuple[str, int], tuple[str, str, str, str]] = {}


def _doc_keys(prefix: str, i: int) -> tuple[str, str, str, str]:
    """The id/content/score/metadata attribute keys of document ``i`` (built once, then cached)."""
    keys = _DOC_KEYS.get((prefix, i))
    if keys is None:
        p = f"{prefix}{i}.document."
        keys = (p + "id", p + "content", p + "score", p + "metadata")
        if len(_DOC_KEYS) < 10_000:
            _DOC_KEYS[(prefix, i)] = keys
    return keys


def _documents(attrs: dict[str, Any], prefix: str) -> list[Chunk]:
    """Chunks from ``{prefix}{i}.document.{id,content,score,metadata}`` for i = 0, 1, ..."""
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
    differently from Python 3.12 on, and the native fast path must give the same bits)."""
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
        if a.get("rag.root"):
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
        t.source = "openinference" if any(_KIND in s.attrs for s in spans) else "gen_ai"
    t.time = (root or first).start
    t.end_time = end_time
    t.service = (root or first).service
    ra: dict[str, Any] = root.attrs if root is not None else {}
    t.latency_ms = _ms(root) if root is not None else (t.end_time - t.time) / 1e6
    t.query = str(ra.get("input.value", "") or "")
    t.answer = str(ra.get("output.value", "") or "")
    llm = max(llms, key=lambda s: s.end) if llms else None
    if llm is not None:
        la = llm.attrs
        if not t.answer:
            t.answer = str(
                la.get("output.value")
                or la.get("llm.output_messages.0.message.content")
                or la.get("gen_ai.completion.0.content")
                or ""
            )
        if not t.query:
            t.query = _last_user(
                _messages(la, "llm.input_messages.", "message.role", "message.content")
            ) or _last_user(_messages(la, "gen_ai.prompt.", "role", "content"))
        t.model = str(
            la.get("gen_ai.request.model")
            or la.get("gen_ai.response.model")
            or la.get("llm.model_name")
            or ""
        )
        t.provider = str(
            la.get("gen_ai.provider.name") or la.get("gen_ai.system") or la.get("llm.provider") or ""
        )
        t.input_tokens = min(
            _TOKENS_MAX,
            sum(
                _int(s.attrs.get("gen_ai.usage.input_tokens", s.attrs.get("llm.token_count.prompt")))
                for s in llms
            ),
        )
        t.output_tokens = min(
            _TOKENS_MAX,
            sum(
                _int(s.attrs.get("gen_ai.usage.output_tokens", s.attrs.get("llm.token_count.completion")))
                for s in llms
            ),
        )
        t.generation_ms = _total_ms(llms)
    if not t.query and retrievers:
        t.query = str(retrievers[0].attrs.get("input.value", "") or "")
    if rerankers:
        rr = max(rerankers, key=lambda s: s.end)
        t.chunks = _documents(rr.attrs, "reranker.output_documents.")
        t.rerank_ms = _total_ms(rerankers)
    if retrievers:
        if not t.chunks:
            for r in sorted(retrievers, key=lambda s: s.start):
                t.chunks.extend(_documents(r.attrs, "retrieval.documents."))
        t.retrieval_ms = _total_ms(retrievers)
    if root is not None:
        for name, _ts, ea in root.events:
            if name == "rag.citation":
                t.citations.append(
                    Citation(
                        str(ea.get("rag.citation.document.id", "")),
                        str(ea.get("rag.citation.marker", "")),
                        _int(ea.get("rag.citation.answer.start", -1), -1, _POSITION_MAX),
                        _int(ea.get("rag.citation.answer.end", -1), -1, _POSITION_MAX),
                    )
                )
    t.corpus_version = str(ra.get("rag.corpus.version", "") or "")
    t.risk_level = str(ra.get("rag.risk_level", "") or "")
    t.query_type = str(ra.get("rag.query_type", "") or "")
    t.session_id = str(ra.get("session.id", "") or "")
    t.user_id = str(ra.get("user.id", "") or "")
    route = ra.get("http.route")
    if route is None and trace_root is not None:
        route = trace_root.attrs.get("http.route")
    t.route = str(route or "")
    t.status = "error" if error else "ok"
    attributes = dict(ra)
    attributes.pop("input.value", None)
    attributes.pop("output.value", None)
    t.attributes = attributes
    return t
