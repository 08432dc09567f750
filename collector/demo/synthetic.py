"""Synthetic RAG traces as OTLP protobufs, following DESIGN.md's span conventions.

Used by the collector's tests and benchmarks (and handy for trying a
deployment): :func:`make_trace` builds the spans of one RAG call (root CHAIN
span with citations, retrieval, optional rerank, generation) and
:func:`traces_data` packs span groups into one ``TracesData`` record, either
one resource per trace or several traces under shared resources, the two
shapes the OTel Collector's kafkaexporter produces.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, Status, TracesData

from ...agent import conventions as sc

__all__ = ["BASE_TIME_NS", "trace_id_for", "make_trace", "traces_data", "SynthTrace", "WORDS"]

# Default trace time: the start of the previous hour, fixed per process, so traces are recent
# (inside any TTL) and the same trace number gets the same time within one run.
BASE_TIME_NS = (time.time_ns() // 3_600_000_000_000 - 1) * 3_600_000_000_000

WORDS = (
    "retention policy logs deletion legal hold records officer authorization transaction years customer "
    "contact request verified current superseded archive audit compliance backup storage encryption access "
    "review quarterly annual report incident response vendor contract renewal notice period termination"
).split()


def trace_id_for(i: int, seed: str = "synth") -> bytes:
    """A deterministic 16-byte trace id for trace number ``i``."""
    return hashlib.blake2b(f"{seed}:{i}".encode(), digest_size=16).digest()


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


class SynthTrace:
    """The spans of one synthetic RAG call plus what a test needs to check it."""

    __slots__ = (
        "trace_id",
        "service",
        "spans",
        "query",
        "answer",
        "chunk_ids",
        "error",
        "refusal",
        "risk",
        "feedback",
    )

    def __init__(self, trace_id: bytes, service: str) -> None:
        self.trace_id = trace_id
        self.service = service
        self.spans: list[Span] = []
        self.query = ""
        self.answer = ""
        self.chunk_ids: list[str] = []
        self.error = False
        self.refusal = False
        self.risk = "low"
        self.feedback = ""

    @property
    def hex(self) -> str:
        return self.trace_id.hex()

    def children(self) -> list[Span]:
        return [s for s in self.spans if s.parent_span_id]

    def root(self) -> Span:
        return next(s for s in self.spans if not s.parent_span_id)


def make_trace(
    i: int,
    seed: str = "synth",
    service: str = "rag-app",
    n_chunks: int = 5,
    chunk_chars: int = 300,
    rerank: bool = False,
    error: bool = False,
    refusal: bool = False,
    risk: str = "low",
    feedback: str = "",
    start_ns: int | None = None,
    rng: random.Random | None = None,
    variant: str = "",
    model: str = "gpt-x",
) -> SynthTrace:
    """One RAG call's spans (root, retrieval, optional rerank, generation) with citations."""
    rng = rng or random.Random(i)
    tid = trace_id_for(i, seed)
    t = SynthTrace(tid, service)
    t.error, t.refusal, t.risk, t.feedback = error, refusal, risk, feedback
    base = start_ns if start_ns is not None else BASE_TIME_NS + i * 1_000_000
    sid = iter(hashlib.blake2b(tid, digest_size=40).digest()[k : k + 8] for k in range(0, 40, 8))
    root_id = next(sid)
    words = WORDS
    t.query = " ".join(rng.choice(words) for _ in range(10)) + "?"
    chunks = []
    for c in range(n_chunks):
        text = " ".join(rng.choice(words) for _ in range(chunk_chars // 7))[:chunk_chars]
        cid = f"doc-{rng.randrange(10_000)}-{c}"
        chunks.append((cid, text, round(0.9 - 0.1 * c + rng.random() * 0.05, 4)))
    t.chunk_ids = [c[0] for c in chunks]
    if refusal:
        t.answer = "The available sources do not establish the rule."
    else:
        t.answer = " ".join(f"{chunks[k % n_chunks][1][:80]} [{k % n_chunks + 1}]." for k in range(3))
    t.spans.append(_retrieval_span(tid, next(sid), root_id, base, t.query, chunks))
    if rerank:
        t.spans.append(_rerank_span(tid, next(sid), root_id, base, chunks[: max(1, n_chunks // 2)]))
    gen = Span(trace_id=tid, span_id=next(sid), parent_span_id=root_id, name="generate",
               start_time_unix_nano=base + 31_000_000, end_time_unix_nano=base + 331_000_000)  # fmt: skip
    gen.attributes.extend([
        _kv(sc.SPAN_KIND, sc.KIND_LLM), _kv(sc.GEN_AI_OPERATION, sc.OP_CHAT),
        _kv(sc.GEN_AI_REQUEST_MODEL, model), _kv(sc.GEN_AI_PROVIDER, "openai"),
        _kv(sc.GEN_AI_INPUT_TOKENS, 800 + n_chunks * 60), _kv(sc.GEN_AI_OUTPUT_TOKENS, 60),
        _kv(sc.OUTPUT_VALUE, t.answer),
    ])  # fmt: skip
    if error:
        gen.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="upstream timeout"))
    t.spans.append(gen)
    root = Span(trace_id=tid, span_id=root_id, name="rag.answer",
                start_time_unix_nano=base, end_time_unix_nano=base + 340_000_000)  # fmt: skip
    root.attributes.extend([
        _kv(sc.SPAN_KIND, sc.KIND_CHAIN), _kv(sc.RAG_ROOT, True), _kv(sc.INPUT_VALUE, t.query),
        _kv(sc.OUTPUT_VALUE, t.answer), _kv(sc.RAG_CORPUS_VERSION, "v3"), _kv(sc.RAG_RISK_LEVEL, risk),
        _kv(sc.RAG_QUERY_TYPE, "policy"), _kv(sc.SESSION_ID, f"s{i % 97}"), _kv(sc.USER_ID, f"u{i % 31}"),
        _kv(sc.RAG_CITATION_COUNT, 0 if refusal else 3),
    ])  # fmt: skip
    if feedback:
        root.attributes.append(_kv(sc.RAG_FEEDBACK, feedback))
    if variant:
        root.attributes.append(_kv(sc.RAG_VARIANT, variant))
    if error:
        root.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="generation failed"))
    if not refusal:
        _add_citations(root, t.answer, [c[0] for c in chunks], base + 335_000_000)
    t.spans.append(root)
    return t


def _retrieval_span(
    tid: bytes, span_id: bytes, root_id: bytes, base: int, query: str, chunks: list[tuple[str, str, float]]
) -> Span:
    """The retriever's span: the query and every chunk (id, content, score, metadata) as flattened documents."""
    ret = Span(trace_id=tid, span_id=span_id, parent_span_id=root_id, name="retrieve",
               start_time_unix_nano=base + 1_000_000, end_time_unix_nano=base + 21_000_000, kind=Span.SPAN_KIND_INTERNAL)  # fmt: skip
    ret.attributes.extend([
        _kv(sc.SPAN_KIND, sc.KIND_RETRIEVER), _kv(sc.GEN_AI_OPERATION, sc.OP_RETRIEVAL),
        _kv(sc.INPUT_VALUE, query), _kv(sc.GEN_AI_REQUEST_TOP_K, len(chunks)),
    ])  # fmt: skip
    for k, (cid, text, score) in enumerate(chunks):
        meta = json.dumps({"status": "current", "authoritative": True})
        ret.attributes.extend(_kv(sc.document_key(sc.RETRIEVAL_DOCUMENTS, k, field), value)
                              for field, value in zip(sc.DOCUMENT_FIELDS, (cid, text, score, meta), strict=True))  # fmt: skip
    return ret


def _rerank_span(
    tid: bytes, span_id: bytes, root_id: bytes, base: int, kept: list[tuple[str, str, float]]
) -> Span:
    """The reranker's span: the chunks it kept (id, content, score) as its output documents."""
    rr = Span(trace_id=tid, span_id=span_id, parent_span_id=root_id, name="rerank",
              start_time_unix_nano=base + 22_000_000, end_time_unix_nano=base + 30_000_000)  # fmt: skip
    rr.attributes.append(_kv(sc.SPAN_KIND, sc.KIND_RERANKER))
    for k, (cid, text, score) in enumerate(kept):
        rr.attributes.extend(_kv(sc.document_key(sc.RERANKER_OUTPUT_DOCUMENTS, k, field), value)
                             for field, value in zip(sc.DOCUMENT_FIELDS[:3], (cid, text, score), strict=True))  # fmt: skip
    return rr


def _add_citations(root: Span, answer: str, chunk_ids: list[str], at_ns: int) -> None:
    """Three citation events on the root span, one per "[n]" marker of the answer."""
    pos = 0
    for k in range(3):
        marker = f"[{k % len(chunk_ids) + 1}]"
        end = answer.index(marker, pos)
        ev = root.events.add()
        ev.name = sc.CITATION_EVENT
        ev.time_unix_nano = at_ns
        ev.attributes.extend([
            _kv(sc.CITATION_DOCUMENT_ID, chunk_ids[k % len(chunk_ids)]), _kv(sc.CITATION_MARKER, marker),
            _kv(sc.CITATION_START, pos), _kv(sc.CITATION_END, end),
        ])  # fmt: skip
        pos = end + len(marker)


def traces_data(groups: Iterable[tuple[str, Sequence[Span]]], shared_resource: bool = False) -> bytes:
    """Serialize ``(service, spans)`` groups into one ``TracesData``.

    ``shared_resource=False``: one ResourceSpans per group (kafkaexporter with
    ``partition_traces_by_id`` splits records like this); True: groups of the
    same service share one ResourceSpans (a multi-trace, multi-resource batch).
    """
    td = TracesData()
    by_service: dict[str, ResourceSpans] = {}
    for service, spans in groups:
        rs = by_service.get(service) if shared_resource else None
        if rs is None:
            rs = td.resource_spans.add()
            rs.resource.attributes.append(_kv(sc.SERVICE_NAME, service))
            rs.scope_spans.add().scope.name = "ragpulse"
            if shared_resource:
                by_service[service] = rs
        rs.scope_spans[0].spans.extend(spans)
    return td.SerializeToString()
