"""The calls and exporters ``bench/sdk_overhead.py`` times (also imported by its Langfuse worker).

One RAG call = root + retrieval + generation; the retriever returns 10 chunks of 500 characters,
the answer carries two citation markers. Nothing here imports OpenTelemetry or ragpulse at module
level: the Langfuse worker imports this file in a virtual environment that has neither ragpulse
nor the project's dependencies, only Langfuse's.

Every exporter encodes what it is given and writes the bytes nowhere, so the export CPU each
variant reports is its encoder's: the OTel SDK's OTLP protobuf encoder
(``opentelemetry.exporter.otlp.proto.common``, what ``OTLPSpanExporter`` sends) for the OTel and
Langfuse variants, and the agent's own Kafka exporter (records keyed by trace id, OTLP
``TracesData`` values) with a producer that accepts every record at once for ragpulse.
Compression and the network are left out on both sides.
"""

from __future__ import annotations

import json
import re
from typing import Any

CHUNKS = [
    {
        "id": f"C{i}",
        "content": (f"Chunk {i}: retention policy text " * 40)[:500],
        "score": round(0.95 - i * 0.05, 3),
        "metadata": {"status": "current", "source": f"policy-{i}.md"},
    }
    for i in range(1, 11)
]
ANSWER = "Transaction logs are kept for five years [1]. Early deletion needs all legal holds released [2]."
QUERY = "How long are transaction logs kept, and when may they be deleted early?"


class ByteCount:
    """Where the exporters' bytes go: counted, then dropped."""

    def __init__(self) -> None:
        self.bytes = 0

    def take(self) -> int:
        n, self.bytes = self.bytes, 0
        return n


def noop_exporter() -> Any:
    """An OTel ``SpanExporter`` that drops every batch unencoded (the floors' exporter)."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class NoopExporter(SpanExporter):
        def export(self, spans: Any) -> Any:
            return SpanExportResult.SUCCESS

    return NoopExporter()


def otlp_exporter(sink: ByteCount) -> Any:
    """An OTel ``SpanExporter`` that encodes each batch with the SDK's OTLP protobuf encoder."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class OtlpEncodingExporter(SpanExporter):
        def export(self, spans: Any) -> Any:
            sink.bytes += len(encode_spans(spans).SerializeToString())
            return SpanExportResult.SUCCESS

    return OtlpEncodingExporter()


class _Accepted:
    """A send's future that is already acknowledged (kafka-python's FutureRecordMetadata API)."""

    __slots__ = ()

    def add_callback(self, fn: Any, *args: Any) -> _Accepted:
        fn(*args, None)
        return self

    def add_errback(self, fn: Any, *args: Any) -> _Accepted:
        return self


_ACCEPTED = _Accepted()


class NullProducer:
    """kafka-python's producer API writing nowhere: every record is counted and acknowledged."""

    def __init__(self, sink: ByteCount) -> None:
        self.sink = sink

    def send(self, topic: str, key: bytes | None = None, value: bytes | None = None) -> _Accepted:
        self.sink.bytes += len(value or b"")
        return _ACCEPTED

    def flush(self, timeout: float | None = None) -> None:
        return None

    def close(self, timeout: float | None = None) -> None:
        return None


def kafka_exporter(sink: ByteCount) -> Any:
    """The agent's own Kafka exporter (its encoding, keys and counting) over a null producer."""
    from ragpulse.agent.kafka_exporter import KafkaSpanExporter

    return KafkaSpanExporter("unused:9092", producer=NullProducer(sink))


def otel_manual(tracer: Any) -> Any:
    """The same three spans instrumented by hand with the OTel API: what ragpulse's decorators replace."""
    marker = re.compile(r"\[(\d+)\]")

    def call() -> None:
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("rag.root", True)
            root.set_attribute("input.value", QUERY)
            with tracer.start_as_current_span("retrieval") as ret:
                chunks = CHUNKS
                ret.set_attribute("openinference.span.kind", "RETRIEVER")
                ret.set_attribute("gen_ai.operation.name", "retrieval")
                ret.set_attribute("input.value", QUERY)
                ret.set_attribute("gen_ai.request.top_k", 10)
                for i, c in enumerate(chunks):
                    p = f"retrieval.documents.{i}.document."
                    ret.set_attribute(p + "id", c["id"])
                    ret.set_attribute(p + "content", c["content"])
                    ret.set_attribute(p + "score", c["score"])
                    ret.set_attribute(p + "metadata", json.dumps(c["metadata"]))
            with tracer.start_as_current_span("generation") as gen:
                answer = ANSWER
                gen.set_attribute("openinference.span.kind", "LLM")
                gen.set_attribute("gen_ai.operation.name", "chat")
                gen.set_attribute("gen_ai.request.model", "gpt-bench")
                gen.set_attribute("gen_ai.provider.name", "openai")
                gen.set_attribute("gen_ai.usage.input_tokens", 1200)
                gen.set_attribute("gen_ai.usage.output_tokens", 40)
                gen.set_attribute("output.value", answer)
            root.set_attribute("output.value", answer)
            count = 0
            for m in marker.finditer(answer):
                start = answer.rfind(". ", 0, m.start()) + 1
                root.add_event(
                    "rag.citation",
                    {
                        "rag.citation.document.id": chunks[int(m.group(1)) - 1]["id"],
                        "rag.citation.marker": m.group(0),
                        "rag.citation.answer.start": start,
                        "rag.citation.answer.end": m.start(),
                    },
                )
                count += 1
            root.set_attribute("rag.citation.count", count)

    return call


def floors(tracer: Any) -> dict[str, Any]:
    """The bare OTel SDK opening the call's three spans empty: as context managers (the floor)
    and with ``start_span`` + ``context.attach`` (the cheapest way, informational)."""
    from opentelemetry import context as context_api
    from opentelemetry import trace as trace_api

    def floor() -> None:
        with tracer.start_as_current_span("rag"):
            with tracer.start_as_current_span("retrieval"):
                pass
            with tracer.start_as_current_span("generation"):
                pass

    set_span = trace_api.set_span_in_context
    attach, detach = context_api.attach, context_api.detach

    def floor_direct() -> None:
        root = tracer.start_span("rag")
        token = attach(set_span(root))
        for name in ("retrieval", "generation"):
            child = tracer.start_span(name)
            inner = attach(set_span(child))
            detach(inner)
            child.end()
        detach(token)
        root.end()

    return {"floor": floor, "floor-direct": floor_direct}


def ragpulse_call() -> Any:
    """The RAG call instrumented with the agent's decorators (after configure())."""
    from ragpulse.agent import generation, retrieval, trace_rag

    @retrieval
    def search(query: str, top_k: int = 10) -> list[dict]:
        return CHUNKS

    @generation(model="gpt-bench", provider="openai")
    def complete(prompt: str) -> str:
        return ANSWER

    @trace_rag
    def rag(query: str) -> str:
        search(query)
        return complete(query)

    return lambda: rag(QUERY)


# The agentic call (issue 43): a follow-up turn with a 6-message history; the query is rewritten
# by one generation, three retrievals fetch 5 chunks each, two tools are called, and a second
# generation answers from the chunks it is given.
HISTORY = [
    {"role": "user", "content": "How long do we keep transaction logs?"},
    {"role": "assistant", "content": "Transaction logs are kept for five years under the retention policy."},
    {"role": "user", "content": "Does that include the audit trail of account changes?"},
    {"role": "assistant", "content": "Yes, the audit trail follows the same five-year retention."},
    {"role": "user", "content": "Who approves an exception to the retention period?"},
    {"role": "assistant", "content": "The records officer approves exceptions, after legal review."},
]
FOLLOW_UP = "And can we delete them sooner?"
REWRITTEN = "Can transaction logs be deleted before the five-year retention period ends?"
ACCOUNT = {"account": "A-1", "balance": 1234.56, "currency": "EUR", "status": "active"}
HOLDS = [{"id": "H-7", "status": "released", "released_on": "2024-03-01"}]
AGENTIC_SPANS = 8  # root, 2 generations, 3 retrievals, 2 tool calls
AGENTIC_QUERIES = (REWRITTEN, FOLLOW_UP, "retention exceptions legal hold")
AGENTIC_CHUNKS = [
    {
        "id": f"A{i}",
        "content": (f"Passage {i}: retention and deletion rules " * 30)[:500],
        "score": round(0.9 - i * 0.02, 3),
        "metadata": {"source": f"handbook-{i}.md"},
    }
    for i in range(1, 16)
]


def agentic_floor(tracer: Any) -> Any:
    """The bare OTel SDK opening the agentic call's eight spans empty, nested as ragpulse nests them."""

    def call() -> None:
        with tracer.start_as_current_span("agent"):
            for name in ("rewrite", "search", "search", "search", "lookup_account", "legal_holds", "answer"):
                with tracer.start_as_current_span(name):
                    pass

    return call


def ragpulse_agentic() -> Any:
    """The agentic call instrumented with the agent's decorators (after configure())."""
    from ragpulse.agent import generation, retrieval, tool, trace_rag

    @generation(model="gpt-bench", provider="openai")
    def rewrite(prompt: str) -> str:
        return REWRITTEN

    @retrieval
    def search(query: str, top_k: int = 5) -> list[dict]:
        start = AGENTIC_QUERIES.index(query) * top_k
        return AGENTIC_CHUNKS[start : start + top_k]

    @tool
    def lookup_account(account_id: str) -> dict:
        """The account's balance and status."""
        return ACCOUNT

    @tool
    def legal_holds(account_id: str) -> list[dict]:
        """Legal holds on the account."""
        return HOLDS

    @generation(model="gpt-bench", provider="openai")
    def answer(prompt: str, chunks: list[dict]) -> str:
        return ANSWER

    @trace_rag
    def agent(query: str, history: list[dict]) -> str:
        rewritten = rewrite(query)
        chunks = search(rewritten) + search(query) + search(AGENTIC_QUERIES[2])
        lookup_account("A-1")
        legal_holds("A-1")
        return answer(rewritten, chunks=chunks)

    return lambda: agent(FOLLOW_UP, HISTORY)
