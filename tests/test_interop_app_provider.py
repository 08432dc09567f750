"""ragpulse's agent under the application's own tracer provider (``exporter="none"``) -> embedded collector.

The provider keeps the SDK's default 128 attributes per span: 40 chunks with metadata need
about 165 on the retrieval span and 100 far more, so the agent writes their documents as one
``gen_ai.retrieval.documents`` attribute, warns once and counts it. A provider configured in code
with a lower limit than the environment says drops attributes of the first span; the agent
wrote the span kind and the first documents last, so those survive, and it fits later spans.
Chunks without ids of their own that share a ``source`` (LangChain documents split from one
file) get unique ids, the source kept beside them.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse import agent
from ragpulse.agent.embedded import EmbeddedSpanExporter

from .interop import CORPUS, QUESTION, Expected, Pipeline, check_stored, metadata_of, scripted_app


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    with Pipeline(Path(tmp_path_factory.mktemp("app-provider")) / "db") as pipeline:
        yield pipeline
        agent.shutdown()


def _chunks(n: int) -> list[dict[str, Any]]:
    """CORPUS first, then filler chunks: ``n`` chunks with ids, scores and metadata."""
    out = [
        {"id": f"C{i}", "content": text, "score": round(0.99 - i * 0.005, 4), "metadata": dict(meta)}
        for i, (text, meta) in enumerate(CORPUS, 1)
    ]
    for i in range(len(out) + 1, n + 1):
        out.append({"id": f"C{i}", "content": f"Filler policy clause number {i} about archive labels.",
                    "score": round(0.99 - i * 0.005, 4), "metadata": {"source": f"filler-{i}.md", "page": i}})  # fmt: skip
    return out


def _expected(answer: str, chunks: list[dict[str, Any]]) -> Expected:
    """What the application produced for one call that retrieved ``chunks``."""
    return Expected(
        QUESTION,
        answer,
        [c["id"] for c in chunks],
        [c["content"] for c in chunks],
        [c["score"] for c in chunks],
    )


def _run(
    pipe: Pipeline, chunks: list[Any], provider: Any = None, **options: Any
) -> tuple[list[str], list[str]]:
    agent.configure(exporter="none", tracer_provider=provider or pipe.provider, **options)
    answer = scripted_app(chunks)
    answers = [answer(QUESTION), answer(QUESTION)]
    assert agent.flush()
    pipe.flush()
    return answers, pipe.root_trace_ids()[-2:]


@pytest.mark.parametrize("n", [40, 100])
def test_many_chunks_under_the_default_attribute_limit(
    pipe: Pipeline, n: int, caplog: pytest.LogCaptureFixture
) -> None:
    chunks = _chunks(n)
    before = agent.stats()
    with caplog.at_level(logging.WARNING, logger="ragpulse.agent"):
        answers, (right, wrong) = _run(pipe, chunks, max_chunks=100)
    after = agent.stats()
    row = check_stored(pipe, right, _expected(answers[0], chunks), "ragpulse", "healthy")
    assert metadata_of(row) == [c["metadata"] for c in chunks]
    check_stored(pipe, wrong, _expected(answers[1], chunks), "ragpulse", "generation")
    assert after["compacted_spans"] - before["compacted_spans"] == 2  # one retrieval span per call
    assert after["attributes_dropped"] == before["attributes_dropped"]
    assert after["spans_exported"] - before["spans_exported"] == 6
    warned = [r for r in caplog.records if "gen_ai.retrieval.documents" in r.getMessage()]
    assert len(warned) == 1  # once per configuration, however many spans


def test_over_max_chunks_is_counted_as_truncated(pipe: Pipeline) -> None:
    chunks = _chunks(60)
    before = agent.stats()
    answers, (right, _wrong) = _run(pipe, chunks)  # max_chunks 50 by default
    check_stored(pipe, right, _expected(answers[0], chunks[:50]), "ragpulse", "healthy")
    assert agent.stats()["truncated_spans"] - before["truncated_spans"] == 2


def test_a_lower_limit_set_in_code_keeps_the_kind_and_first_documents(pipe: Pipeline) -> None:
    tight = TracerProvider(
        resource=Resource.create({"service.name": "tight-app"}),
        span_limits=SpanLimits(max_span_attributes=24),
    )
    memory = InMemorySpanExporter()
    tight.add_span_processor(SimpleSpanProcessor(EmbeddedSpanExporter()))
    tight.add_span_processor(SimpleSpanProcessor(memory))
    chunks = _chunks(10)  # 4 attributes each: over 24, though SpanLimits() from the environment says 128
    before = agent.stats()
    answers, _ = _run(pipe, chunks, provider=tight)
    after = agent.stats()
    spans = sorted(memory.get_finished_spans(), key=lambda s: s.start_time)
    first, second = (format(s.context.trace_id, "032x") for s in spans if s.parent is None)
    assert after["attributes_dropped"] > before["attributes_dropped"]
    search = [s for s in spans if s.name == "search"]
    assert search[0].attributes["openinference.span.kind"] == "RETRIEVER"
    assert search[0].attributes["retrieval.documents.0.document.id"] == "C1"
    stored = pipe.stored(first)
    kept = len(stored["chunk_ids"])  # the provider dropped the last documents, never the first
    assert 0 < kept < 10 and stored["chunk_ids"] == [c["id"] for c in chunks[:kept]]
    assert stored["citation_doc_ids"] == ["C1"]
    # Learned from the drop: the second call's documents fit, as one JSON attribute.
    check_stored(pipe, second, _expected(answers[1], chunks), "ragpulse", "generation")
    assert after["compacted_spans"] - before["compacted_spans"] == 1
    tight.shutdown()


def test_documents_sharing_a_source_get_unique_ids(pipe: Pipeline) -> None:
    """LangChain documents without ids take metadata["source"]: two chunks of retention.md."""
    from langchain_core.documents import Document

    docs = [Document(page_content=text, metadata=dict(meta)) for text, meta in CORPUS]
    answers, (right, wrong) = _run(pipe, docs)
    sources = [d.metadata["source"] for d in docs]
    repeated = {s for s in sources if sources.count(s) > 1}
    ids = [
        f"{s}#{hashlib.sha1(d.page_content.encode()).hexdigest()[:12]}" if s in repeated else s
        for s, d in zip(sources, docs, strict=True)
    ]
    assert len(set(ids)) == 3
    for trace_id, a, mode in ((right, answers[0], "healthy"), (wrong, answers[1], "generation")):
        want = Expected(QUESTION, a, ids, [d.page_content for d in docs], [None, None, None], sources)
        check_stored(pipe, trace_id, want, "ragpulse", mode)
