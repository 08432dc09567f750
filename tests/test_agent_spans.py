"""The agent's spans as an OTel in-memory exporter sees them: every callable form, citations, errors.

The agent runs with its own TracerProvider and export thread (as in production)
and hands the final spans to OTel's ``InMemorySpanExporter``; ``flush()`` makes
the export thread's work visible before asserting.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from ragpulse.agent import (
    cite,
    configure,
    current_rag,
    flush,
    generation,
    retrieval,
    shutdown,
    stats,
    trace_rag,
)

from tests.agent_memory import spans_by_name, under_app_provider

CHUNKS = [
    {
        "id": "C1",
        "content": "Logs are kept for five years.",
        "score": 0.91,
        "metadata": {"status": "current"},
    },
    {
        "id": "C2",
        "content": "Legal holds must be released first.",
        "score": 0.82,
        "metadata": {"status": "current"},
    },
    {
        "id": "C3",
        "content": "Logs were kept for three years.",
        "score": 0.40,
        "metadata": {"status": "superseded"},
    },
]
ANSWER = "Logs are kept for five years [1]. Deletion needs hold release [C2][3]."


def check_chunks(span, chunks=CHUNKS):
    a = span.attributes
    assert a["openinference.span.kind"] == "RETRIEVER"
    assert a["gen_ai.operation.name"] == "retrieval"
    for i, c in enumerate(chunks):
        assert a[f"retrieval.documents.{i}.document.id"] == c["id"]
        assert a[f"retrieval.documents.{i}.document.content"] == c["content"]
        assert a[f"retrieval.documents.{i}.document.score"] == pytest.approx(c["score"])
        assert json.loads(a[f"retrieval.documents.{i}.document.metadata"]) == c["metadata"]
    assert f"retrieval.documents.{len(chunks)}.document.id" not in a


def citation_events(root):
    return [
        (
            e.attributes["rag.citation.document.id"],
            e.attributes.get("rag.citation.marker"),
            e.attributes.get("rag.citation.answer.start"),
            e.attributes.get("rag.citation.answer.end"),
        )
        for e in root.events
        if e.name == "rag.citation"
    ]


def check_tree(by_name, root_name="answer"):
    (root,) = by_name[root_name]
    (ret,) = by_name["search"]
    (gen,) = by_name["complete"]
    assert root.parent is None
    for child in (ret, gen):
        assert child.context.trace_id == root.context.trace_id
        assert child.parent.span_id == root.context.span_id
    assert root.attributes["rag.root"] is True
    assert root.attributes["openinference.span.kind"] == "CHAIN"
    assert root.resource.attributes["service.name"] == "test-svc"
    return root, ret, gen


def expected_parsed():
    first = ANSWER.index("Logs are kept for five years") + len("Logs are kept for five years")
    second_start = ANSWER.index("Deletion")
    second_end = ANSWER.index(" [C2]")
    return [
        ("C1", "[1]", 0, first),
        ("C2", "[C2]", second_start, second_end),
        ("C3", "[3]", second_start, second_end),
    ]


# ------------------------------------------------------------------------------------------
# sync
# ------------------------------------------------------------------------------------------
@retrieval
def search(query: str, top_k: int = 3) -> list[dict]:
    """Find chunks."""
    return CHUNKS[:top_k]


@generation(model="gpt-test", provider="openai")
def complete(prompt: str) -> dict:
    return {
        "model": "gpt-test-0501",
        "choices": [{"message": {"content": ANSWER}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 17},
    }


@trace_rag
def answer(query: str, session_id: str | None = None) -> str:
    """Answer a question with citations."""
    chunks = search(query, top_k=3)
    assert len(chunks) == 3
    cite("C2", 5, 12)
    return complete(f"{query}\n{chunks}")["choices"][0]["message"]["content"]


def test_sync_span_tree_chunks_answer_and_citations(mem):
    assert answer("How long are logs kept?", session_id="s-1") == ANSWER
    root, ret, gen = check_tree(spans_by_name(mem))
    assert root.attributes["input.value"] == "How long are logs kept?"
    assert root.attributes["output.value"] == ANSWER
    assert root.attributes["session.id"] == "s-1"
    check_chunks(ret)
    assert ret.attributes["input.value"] == "How long are logs kept?"
    assert ret.attributes["gen_ai.request.top_k"] == 3
    assert gen.attributes["openinference.span.kind"] == "LLM"
    assert gen.attributes["gen_ai.operation.name"] == "chat"
    assert gen.attributes["gen_ai.request.model"] == "gpt-test"
    assert gen.attributes["gen_ai.response.model"] == "gpt-test-0501"
    assert gen.attributes["gen_ai.provider.name"] == "openai"
    assert gen.attributes["gen_ai.usage.input_tokens"] == 120
    assert gen.attributes["gen_ai.usage.output_tokens"] == 17
    assert gen.attributes["output.value"] == ANSWER
    cits = citation_events(root)
    assert cits == expected_parsed() + [("C2", None, 5, 12)]
    assert root.attributes["rag.citation.count"] == 4
    for _doc, _marker, start, end in cits[:3]:
        assert ANSWER[start:end].strip() and "[" not in ANSWER[start:end]


def test_signature_docstring_and_return_unchanged(mem):
    assert answer.__doc__ == "Answer a question with citations."
    assert answer.__name__ == "answer"
    assert str(inspect.signature(answer)) == "(query: 'str', session_id: 'str | None' = None) -> 'str'"
    assert search.__doc__ == "Find chunks."
    assert inspect.iscoroutinefunction(aanswer)
    assert inspect.isgeneratorfunction(stream_answer)
    assert inspect.isasyncgenfunction(astream_answer)


class Boom(RuntimeError):
    pass


@trace_rag
def failing(query: str) -> str:
    search(query)
    raise Boom("retriever exploded")


def test_exception_recorded_and_reraised_unchanged(mem):
    with pytest.raises(Boom) as info:
        failing("q")
    assert str(info.value) == "retriever exploded"
    assert info.traceback[-1].name == "failing"  # raised from the user's frame, not ragpulse's
    by_name = spans_by_name(mem)
    (root,) = by_name["failing"]
    assert root.status.status_code is StatusCode.ERROR
    (event,) = [e for e in root.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("Boom")
    assert event.attributes["exception.message"] == "retriever exploded"
    assert by_name["search"][0].parent.span_id == root.context.span_id
    assert by_name["search"][0].status.status_code is StatusCode.UNSET


class Pipeline:
    """Decorated methods: self is skipped when finding the query."""

    def __init__(self):
        self.calls = 0

    @retrieval(top_k=2)
    def fetch(self, question):
        self.calls += 1
        return CHUNKS[:2]

    @trace_rag(name="pipeline.run", risk_level="high", corpus_version="v7")
    def run(self, question):
        self.fetch(question)
        return "Five years [1]."


def test_methods(mem):
    p = Pipeline()
    assert p.run("which retention?") == "Five years [1]."
    assert p.calls == 1
    by_name = spans_by_name(mem)
    (root,) = by_name["pipeline.run"]
    (ret,) = by_name["Pipeline.fetch"]
    assert root.attributes["input.value"] == "which retention?"
    assert root.attributes["rag.risk_level"] == "high"
    assert root.attributes["rag.corpus.version"] == "v7"
    assert ret.attributes["gen_ai.request.top_k"] == 2
    assert citation_events(root) == [("C1", "[1]", 0, len("Five years"))]


# ------------------------------------------------------------------------------------------
# async
# ------------------------------------------------------------------------------------------
@retrieval(name="search")
async def asearch(query: str) -> list[dict]:
    await asyncio.sleep(0)
    return list(CHUNKS)


@generation(name="complete", model="gpt-test")
async def acomplete(prompt: str) -> str:
    await asyncio.sleep(0)
    return ANSWER


@trace_rag(name="answer")
async def aanswer(query: str) -> str:
    await asearch(query)
    return await acomplete(query)


def test_async(mem):
    assert asyncio.run(aanswer("async q")) == ANSWER
    root, ret, gen = check_tree(spans_by_name(mem))
    check_chunks(ret)
    assert root.attributes["output.value"] == ANSWER
    assert gen.attributes["output.value"] == ANSWER
    assert citation_events(root) == expected_parsed()


def test_100_concurrent_asyncio_calls_no_context_bleed(mem):
    @retrieval(name="search")
    async def per_call_search(query: str):
        await asyncio.sleep(0.001)
        n = query.split("-")[1]
        return [{"id": f"D{n}-{j}", "content": f"chunk {j} of {n}", "score": j / 10} for j in range(3)]

    @generation(name="complete", model="m")
    async def per_call_complete(prompt: str):
        await asyncio.sleep(0.001)
        return f"answer {prompt} [1]"

    @trace_rag(name="answer")
    async def per_call_answer(query: str):
        await per_call_search(query)
        await asyncio.sleep(0)
        cite(f"D{query.split('-')[1]}-2")
        return await per_call_complete(query)

    async def main():
        return await asyncio.gather(*(per_call_answer(f"q-{i}") for i in range(100)))

    results = asyncio.run(main())
    assert results == [f"answer q-{i} [1]" for i in range(100)]
    by_name = spans_by_name(mem)
    assert len(by_name["answer"]) == len(by_name["search"]) == len(by_name["complete"]) == 100
    roots = {r.context.span_id: r for r in by_name["answer"]}
    assert len({r.context.trace_id for r in roots.values()}) == 100
    for child in by_name["search"] + by_name["complete"]:
        root = roots[child.parent.span_id]
        assert child.context.trace_id == root.context.trace_id
        assert child.attributes["input.value"] == root.attributes["input.value"]
    for root in roots.values():
        n = root.attributes["input.value"].split("-")[1]
        assert root.attributes["output.value"] == f"answer q-{n} [1]"
        assert citation_events(root) == [
            (f"D{n}-0", "[1]", 0, len(f"answer q-{n}")),
            (f"D{n}-2", None, None, None),
        ]
    for ret in by_name["search"]:
        n = ret.attributes["input.value"].split("-")[1]
        assert ret.attributes["retrieval.documents.2.document.id"] == f"D{n}-2"


def test_threads_no_context_bleed(mem):
    @trace_rag(name="answer")
    def threaded(query):
        search(query, top_k=1)
        return f"a {query}"

    threads = [
        threading.Thread(target=lambda i=i: [threaded(f"t{i}-{k}") for k in range(20)]) for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    by_name = spans_by_name(mem)
    roots = {r.context.span_id: r for r in by_name["answer"]}
    assert len(roots) == 160
    for ret in by_name["search"]:
        assert ret.attributes["input.value"] == roots[ret.parent.span_id].attributes["input.value"]


# ------------------------------------------------------------------------------------------
# streams
# ------------------------------------------------------------------------------------------
@trace_rag(name="answer")
def stream_answer(query: str):
    search(query)
    yield from ("Logs are kept for five years [1]. ", "Deletion needs hold release [C2][3].")


def test_sync_generator_joins_stream(mem):
    gen = stream_answer("stream q")
    # Nothing is traced until the stream is consumed; the span ends with the stream.
    pieces = list(gen)
    assert "".join(pieces) == ANSWER
    by_name = spans_by_name(mem)
    (root,) = by_name["answer"]
    assert root.attributes["output.value"] == ANSWER
    assert root.attributes["rag.stream"] is True
    assert by_name["search"][0].parent.span_id == root.context.span_id
    assert [c[0] for c in citation_events(root)] == ["C1", "C2", "C3"]


def test_sync_generator_closed_early_ends_span(mem):
    gen = stream_answer("early close")
    assert next(gen).startswith("Logs")
    gen.close()
    (root,) = spans_by_name(mem)["answer"]
    assert root.attributes["output.value"] == "Logs are kept for five years [1]. "
    assert root.attributes["rag.stream.closed_early"] is True
    assert root.end_time is not None


def test_sync_generator_exception(mem):
    @trace_rag(name="answer")
    def broken_stream(query):
        yield "partial "
        raise Boom("stream broke")

    gen = broken_stream("q")
    assert next(gen) == "partial "
    with pytest.raises(Boom, match="stream broke"):
        next(gen)
    (root,) = spans_by_name(mem)["answer"]
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["output.value"] == "partial "


@trace_rag(name="answer")
async def astream_answer(query: str):
    await asearch(query)
    for piece in ("Logs are kept for five years [1]. ", "Deletion needs hold release [C2][3]."):
        await asyncio.sleep(0)
        yield piece


def test_async_generator_joins_stream(mem):
    async def consume():
        return [p async for p in astream_answer("astream")]

    pieces = asyncio.run(consume())
    assert "".join(pieces) == ANSWER
    by_name = spans_by_name(mem)
    (root,) = by_name["answer"]
    assert root.attributes["output.value"] == ANSWER
    assert root.attributes["rag.stream"] is True
    check_chunks(by_name["search"][0])
    assert by_name["search"][0].parent.span_id == root.context.span_id
    assert [c[0] for c in citation_events(root)] == ["C1", "C2", "C3"]


def test_async_generator_closed_early(mem):
    async def consume_one():
        agen = astream_answer("astream")
        first = await agen.__anext__()
        await agen.aclose()
        return first

    assert asyncio.run(consume_one()).startswith("Logs")
    (root,) = spans_by_name(mem)["answer"]
    assert root.attributes["rag.stream.closed_early"] is True


def test_streamed_generation_usage_from_last_chunk(mem):
    class Delta:
        def __init__(self, content):
            self.content = content

    class Choice:
        def __init__(self, content):
            self.delta = Delta(content)

    class StreamChunk:
        def __init__(self, content, usage=None):
            self.choices = [Choice(content)]
            self.usage = usage

    @generation(name="complete", model="m")
    def stream_llm(prompt):
        yield StreamChunk("Hello ")
        yield StreamChunk("world", usage={"prompt_tokens": 3, "completion_tokens": 2})

    assert [c.choices[0].delta.content for c in stream_llm("p")] == ["Hello ", "world"]
    (gen,) = spans_by_name(mem)["complete"]
    assert gen.attributes["output.value"] == "Hello world"
    assert gen.attributes["gen_ai.usage.input_tokens"] == 3
    assert gen.attributes["gen_ai.usage.output_tokens"] == 2


# ------------------------------------------------------------------------------------------
# context-manager form
# ------------------------------------------------------------------------------------------
def test_context_manager_form(mem):
    q = "How long are logs kept?"
    with trace_rag("answer", query=q) as rag:
        rag.set_chunks(CHUNKS)
        with generation("complete", model="gpt-cm") as g:
            g.set_output(ANSWER)
            g.set_usage(input_tokens=50, output_tokens=9)
        rag.set_answer(ANSWER)
        rag.cite("C1", 0, 4)
        trace_id = rag.trace_id
    by_name = spans_by_name(mem)
    (root,) = by_name["answer"]
    (ret,) = by_name["retrieval"]
    (gen,) = by_name["complete"]
    assert format(root.context.trace_id, "032x") == trace_id
    assert ret.parent.span_id == root.context.span_id == gen.parent.span_id
    check_chunks(ret)
    assert root.attributes["input.value"] == q
    assert root.attributes["output.value"] == ANSWER
    assert gen.attributes["gen_ai.usage.input_tokens"] == 50
    assert gen.attributes["gen_ai.request.model"] == "gpt-cm"
    assert citation_events(root) == expected_parsed() + [("C1", None, 0, 4)]


def test_context_manager_records_exception(mem):
    with pytest.raises(KeyError):
        with trace_rag("answer", query="q") as rag:
            with retrieval("search") as r:
                r.set_chunks(CHUNKS[:1])
            rag.set_answer("partial")
            raise KeyError("missing")
    by_name = spans_by_name(mem)
    (root,) = by_name["answer"]
    assert root.status.status_code is StatusCode.ERROR
    assert any(e.name == "exception" for e in root.events)
    check_chunks(by_name["search"][0], CHUNKS[:1])


def test_async_with_form(mem):
    async def main():
        async with trace_rag("answer", query="aq") as rag:
            rag.set_answer("A [1]")
            current_rag().set_attribute("rag.query_type", "factoid")

    asyncio.run(main())
    (root,) = spans_by_name(mem)["answer"]
    assert root.attributes["rag.query_type"] == "factoid"
    assert citation_events(root) == [("1", "[1]", 0, 1)]  # no chunks: position kept as written


# ------------------------------------------------------------------------------------------
# duck typing of framework objects and structured answers
# ------------------------------------------------------------------------------------------
class Document:
    """Looks like langchain_core.documents.Document."""

    def __init__(self, page_content, metadata=None, id=None):
        self.page_content = page_content
        self.metadata = metadata or {}
        self.id = id


class TextNode:
    """Looks like llama_index.core.schema.TextNode."""

    def __init__(self, id_, text, metadata):
        self.id_ = id_
        self.text = text
        self.metadata = metadata

    @property
    def node_id(self):
        return self.id_

    def get_content(self):
        return self.text


class NodeWithScore:
    def __init__(self, node, score):
        self.node = node
        self.score = score


def test_langchain_and_llamaindex_duck_typing(mem):
    @retrieval(name="lc")
    def lc(query):
        return [Document("alpha text", {"source": "a.md"}, id="L1"), Document("beta text", {"doc_id": "L2"})]

    @retrieval(name="lc_scores")
    def lc_scores(query):
        return [(Document("gamma", {"id": "L3"}), 0.77)]

    @retrieval(name="li")
    def li(query):
        return [NodeWithScore(TextNode("N1", "node text", {"status": "current"}), 0.66)]

    @trace_rag(name="answer")
    def run(query):
        lc(query)
        lc_scores(query)
        li(query)
        return "x [N1]"

    run("q")
    by_name = spans_by_name(mem)
    a = by_name["lc"][0].attributes
    assert a["retrieval.documents.0.document.id"] == "L1"
    assert a["retrieval.documents.0.document.content"] == "alpha text"
    assert json.loads(a["retrieval.documents.0.document.metadata"]) == {"source": "a.md"}
    assert a["retrieval.documents.1.document.id"] == "L2"
    b = by_name["lc_scores"][0].attributes
    assert b["retrieval.documents.0.document.id"] == "L3"
    assert b["retrieval.documents.0.document.score"] == pytest.approx(0.77)
    c = by_name["li"][0].attributes
    assert c["retrieval.documents.0.document.id"] == "N1"
    assert c["retrieval.documents.0.document.content"] == "node text"
    assert c["retrieval.documents.0.document.score"] == pytest.approx(0.66)
    assert json.loads(c["retrieval.documents.0.document.metadata"]) == {"status": "current"}
    (root,) = by_name["answer"]
    assert citation_events(root) == [("N1", "[N1]", 0, 1)]


def test_structured_answer_citations(mem):
    class Answer:
        def __init__(self):
            self.answer = "Five years."
            self.citations = [{"doc_id": "C1", "start": 0, "end": 10, "marker": "[1]"}, {"id": "C2"}]

    @trace_rag(name="answer")
    def run(query):
        search(query)
        return Answer()

    result = run("q")
    assert isinstance(result, Answer)
    (root,) = spans_by_name(mem)["answer"]
    assert root.attributes["output.value"] == "Five years."
    assert citation_events(root) == [("C1", "[1]", 0, 10), ("C2", None, None, None)]


def test_marker_forms(mem):
    @trace_rag(name="answer")
    def run(query):
        search(query)
        return "A and B [1, 3]. See [link](http://x) and [sic] and [9]."

    run("q")
    (root,) = spans_by_name(mem)["answer"]
    cits = citation_events(root)
    assert [c[0] for c in cits] == ["C1", "C3", "9"]  # [9] is out of range: kept as an invalid citation
    assert cits[0][1] == "[1, 3]"
    assert cits[0][2:] == (0, len("A and B"))


# ------------------------------------------------------------------------------------------
# limits, sampling, exporter none, never harming the app
# ------------------------------------------------------------------------------------------
def test_limits_truncate_and_flag():
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, max_chunks=2, max_chunk_chars=10, max_answer_chars=20)
    try:

        @retrieval(name="search")
        def big_search(query):
            return [{"id": f"C{i}", "content": "y" * 100} for i in range(5)]

        @trace_rag(name="answer")
        def run(query):
            big_search(query)
            return "z" * 50

        run("q")
        by_name = spans_by_name(exporter)
        ret = by_name["search"][0].attributes
        assert ret["retrieval.documents.0.document.content"] == "y" * 10
        assert "retrieval.documents.2.document.id" not in ret
        assert ret["rag.retrieval.documents.count"] == 5
        assert ret["rag.truncated"] is True
        assert set(ret["rag.truncated.fields"]) == {"chunks", "chunk.content"}
        root = by_name["answer"][0].attributes
        assert root["output.value"] == "z" * 20
        assert root["rag.truncated.fields"] == ("answer",)
    finally:
        shutdown()


def test_sample_rate_zero_records_nothing_but_runs():
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, sample_rate=0.0)
    try:
        assert answer("q") == ANSWER
        assert current_rag().recording is False
        flush()
        assert exporter.get_finished_spans() == ()
    finally:
        shutdown()


def test_exporter_none_nests_under_application_span():
    with under_app_provider() as (provider, app_exporter):
        app_tracer = provider.get_tracer("app")
        with app_tracer.start_as_current_span("http.request") as http:
            assert answer("nested?") == ANSWER
        # The agent's spans are completed and ended off the request path: flush() hands them over.
        assert {s.name for s in app_exporter.get_finished_spans()} == {"http.request"}
        assert flush()
        spans = {s.name: s for s in app_exporter.get_finished_spans()}
        # ... ended at the time the call returned, inside the application's span.
        assert spans["search"].end_time <= spans["answer"].end_time <= spans["http.request"].end_time
        assert spans["answer"].parent.span_id == http.get_span_context().span_id
        assert spans["answer"].context.trace_id == http.get_span_context().trace_id
        assert spans["search"].parent.span_id == spans["answer"].context.span_id
        assert spans["answer"].attributes["output.value"] == ANSWER
        assert spans["search"].attributes["retrieval.documents.1.document.id"] == "C2"
        assert [e.attributes["rag.citation.document.id"] for e in spans["answer"].events] == [
            "C1",
            "C2",
            "C3",
            "C2",
        ]


def test_exporter_none_full_queue_completes_spans_on_the_request_path():
    """With the agent's queue full a span is completed and ended at once, never dropped."""
    with under_app_provider(max_queue_spans=1) as (_provider, app_exporter):
        before = stats()
        assert answer("queued?") == ANSWER
        # search took the one place in the queue; complete and answer were ended on the request path.
        ended = {s.name: s for s in app_exporter.get_finished_spans()}
        assert set(ended) == {"complete", "answer"}
        assert ended["answer"].attributes["output.value"] == ANSWER
        assert flush()
        spans = {s.name: s for s in app_exporter.get_finished_spans()}
        assert spans["search"].attributes["retrieval.documents.0.document.id"] == "C1"
        after = stats()
        assert (
            after["spans_exported"] - before["spans_exported"] == 3
            and after["spans_dropped"] == before["spans_dropped"]
        )


def test_own_provider_nests_under_application_trace(mem):
    provider = TracerProvider()
    with provider.get_tracer("app").start_as_current_span("http.request") as http:
        answer("q")
    (root,) = spans_by_name(mem)["answer"]
    assert root.context.trace_id == http.get_span_context().trace_id
    assert root.parent.span_id == http.get_span_context().span_id


def test_own_provider_ends_spans_at_the_time_the_calls_returned(mem):
    """The export thread ends the queued spans, with the end times taken when the calls returned."""
    t0 = time.time_ns()
    answer("when?")
    t1 = time.time_ns()
    by_name = spans_by_name(mem)
    root, ret, gen = check_tree(by_name)
    assert t0 <= ret.start_time <= ret.end_time <= gen.start_time <= gen.end_time <= root.end_time <= t1


def test_a_span_the_application_ends_itself_is_exported_once(mem):
    @retrieval
    def ended_early(query: str) -> list[dict]:
        trace.get_current_span().end()
        return CHUNKS[:1]

    @trace_rag
    def ask(query: str) -> str:
        ended_early(query)
        return ANSWER

    assert ask("q") == ANSWER
    by_name = spans_by_name(mem)
    assert len(by_name["ended_early"]) == 1 and len(by_name["ask"]) == 1
    assert by_name["ask"][0].attributes["output.value"] == ANSWER


def test_broken_exporter_and_odd_values_never_reach_the_app():
    class Exploding:
        def export(self, spans):
            raise OSError("disk on fire")

        def shutdown(self):
            raise OSError("still on fire")

    class Hostile:
        def __getattr__(self, name):
            raise RuntimeError("no attributes for you")

    configure(exporter=Exploding())
    try:
        before = stats()["dropped"]["export_failed"]

        @retrieval(name="search")
        def odd(query):
            return [Hostile()]

        @trace_rag(name="answer")
        def run(query):
            odd(query)
            return Hostile()

        assert isinstance(run("q"), Hostile)
        flush()
        after = stats()
        assert after["dropped"]["export_failed"] + after["dropped"]["internal_error"] > before
    finally:
        shutdown()


def test_embedded_exporter_hands_batches_to_the_sink():
    from ragpulse.agent.embedded import install_embedded_sink, uninstall_embedded_sink

    received = []

    class Sink:
        def submit_spans(self, spans):
            received.extend(spans)

    configure(exporter="embedded")
    try:
        before = stats()["dropped"]["no_sink"]
        answer("no sink yet")
        flush()
        assert stats()["dropped"]["no_sink"] == before + 3
        sink = Sink()
        install_embedded_sink(sink)
        try:
            answer("with sink")
            flush()
        finally:
            uninstall_embedded_sink(sink)
        assert sorted(s.name for s in received) == ["answer", "complete", "search"]
        root = next(s for s in received if s.name == "answer")
        assert root.attributes["input.value"] == "with sink"
        assert len([e for e in root.events if e.name == "rag.citation"]) == 4
    finally:
        shutdown()


def test_queue_full_drops_are_counted_never_block():
    class Slow:
        def export(self, spans):
            import time

            time.sleep(0.2)
            from opentelemetry.sdk.trace.export import SpanExportResult

            return SpanExportResult.SUCCESS

        def shutdown(self):
            pass

    configure(exporter=Slow(), max_queue_spans=30, export_batch_spans=10)
    try:
        before = stats()["dropped"]["queue_full"]
        for _ in range(200):
            answer("q")
        assert stats()["dropped"]["queue_full"] > before
    finally:
        shutdown()


def test_bad_configuration_is_reported_at_configure():
    with pytest.raises(ValueError, match="exporter"):
        configure(exporter="carrier-pigeon")
    with pytest.raises(TypeError, match="unknown option"):
        configure(bootstrap="x")
    with pytest.raises(ValueError, match="sample_rate"):
        configure(sample_rate=2)


@pytest.mark.parametrize("rate", [1.0, 0.0])
def test_generators_stay_transparent_to_send_and_throw(rate):
    """asend/athrow/send/throw reach the wrapped generator, traced or not."""
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, sample_rate=rate)
    try:

        @trace_rag(name="answer")
        def echo(query):
            got = yield "first"
            try:
                yield f"echo {got}"
            except KeyError:
                yield "caught"

        @trace_rag(name="answer")
        async def aecho(query):
            got = yield "first"
            try:
                yield f"echo {got}"
            except KeyError:
                yield "caught"

        gen = echo("q")
        assert next(gen) == "first"
        assert gen.send("x") == "echo x"
        assert gen.throw(KeyError("k")) == "caught"
        gen.close()

        async def drive():
            agen = aecho("q")
            out = [await agen.__anext__(), await agen.asend("y"), await agen.athrow(KeyError("k"))]
            await agen.aclose()
            return out

        assert asyncio.run(drive()) == ["first", "echo y", "caught"]
        flush()
        outputs = sorted(s.attributes["output.value"] for s in exporter.get_finished_spans())
        assert outputs == (["firstecho xcaught", "firstecho ycaught"] if rate else [])
    finally:
        shutdown()


def test_async_and_async_generator_exceptions_recorded_and_reraised(mem):
    @trace_rag(name="answer")
    async def afailing(query):
        await asearch(query)
        raise Boom("async boom")

    @trace_rag(name="stream")
    async def astream_failing(query):
        yield "partial"
        raise Boom("async stream boom")

    async def main():
        with pytest.raises(Boom, match="async boom"):
            await afailing("q")
        agen = astream_failing("q")
        assert await agen.__anext__() == "partial"
        with pytest.raises(Boom, match="async stream boom"):
            await agen.__anext__()

    asyncio.run(main())
    by_name = spans_by_name(mem)
    for name, message in (("answer", "async boom"), ("stream", "async stream boom")):
        (root,) = by_name[name]
        assert root.status.status_code is StatusCode.ERROR
        (event,) = [e for e in root.events if e.name == "exception"]
        assert event.attributes["exception.message"] == message
    assert by_name["search"][0].parent.span_id == by_name["answer"][0].context.span_id
    assert by_name["stream"][0].attributes["output.value"] == "partial"


def test_one_with_spec_shared_by_threads_and_tasks(mem):
    shared = retrieval("search")  # one object, many concurrent with-blocks

    def worker(i):
        with trace_rag("answer", query=f"t{i}"):
            with shared as r:
                r.set_chunks([{"id": f"T{i}", "content": "x"}])
                threading.Event().wait(0.01)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def task(i):
        async with trace_rag("answer", query=f"a{i}"):
            async with shared as r:
                await asyncio.sleep(0.001)
                r.set_chunks([{"id": f"A{i}", "content": "x"}])

    async def main():
        await asyncio.gather(*(task(i) for i in range(20)))

    asyncio.run(main())
    by_name = spans_by_name(mem)
    roots = {r.context.span_id: r for r in by_name["answer"]}
    assert len(roots) == 28 and len(by_name["search"]) == 28
    for ret in by_name["search"]:
        query = roots[ret.parent.span_id].attributes["input.value"]
        assert ret.attributes["retrieval.documents.0.document.id"] == query.upper()


def test_kafka_unreachable_from_the_start_drops_and_counts():
    """No broker at all (nothing listens on the port): calls are served, spans dropped and counted."""
    from tests.services import free_port

    configure(
        exporter="kafka",
        kafka_bootstrap_servers=f"127.0.0.1:{free_port()}",
        kafka_options={"bootstrap_timeout_ms": 1000},
        schedule_delay_ms=50,
    )
    try:
        before = stats()["dropped"]["export_failed"]
        for i in range(300):
            assert answer(f"q{i}") == ANSWER
        assert flush(timeout_s=10)
        assert stats()["dropped"]["export_failed"] - before == 900
    finally:
        shutdown()


def test_one_decorator_object_on_two_functions(mem):
    traced = trace_rag(risk_level="low")

    @traced
    def first(question):
        return "one"

    @traced
    def second(other, q):
        return "two"

    assert first("q1") == "one" and second("x", q="q2") == "two"
    by_name = spans_by_name(mem)
    assert by_name["first"][0].attributes["input.value"] == "q1"
    assert by_name["second"][0].attributes["input.value"] == "q2"
    assert by_name["second"][0].attributes["rag.risk_level"] == "low"


def test_the_own_providers_ids_come_from_the_id_generator():
    """A seeded id generator (the demo's) gives the same trace and span ids on every run."""
    from ragpulse.collector.demo.ids import SeededIds

    def run(seed: int) -> list[tuple[str, int, int]]:
        exporter = InMemorySpanExporter()
        configure(exporter=exporter, service_name="test-svc", id_generator=SeededIds(seed))
        try:
            for q in ("How long are logs kept?", "Who approves deletion?"):
                answer(q)
            flush()
            spans = exporter.get_finished_spans()
        finally:
            shutdown()
        return sorted((s.name, s.context.trace_id, s.context.span_id) for s in spans)

    first = run(3)
    assert len(first) == 6 and len({trace_id for _, trace_id, _ in first}) == 2
    assert run(3) == first
    assert {t for _, t, _ in run(4)}.isdisjoint({t for _, t, _ in first})
    with pytest.raises(ValueError, match="id_generator"):
        configure(exporter=InMemorySpanExporter(), id_generator=object())
