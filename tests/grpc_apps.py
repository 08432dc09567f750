"""The interop applications of tests/test_intake_grpc.py, run as a process of their own.

``python -m tests.grpc_apps PROTOCOL ENDPOINT TOKEN`` runs ragpulse's agent under the
application's provider (two calls) and the OpenInference-instrumented LangChain chain of
tests/test_interop_instrumentations.py (two calls), exporting through the real OTLP exporter
of ``PROTOCOL`` (http, grpc or grpc-gzip), ends with ``provider.shutdown()`` only (never
``agent.flush()``), and prints one JSON line: the root trace ids in call order and the number
of spans. A process of its own, as an application is: LangChain's instrumentors patch
process-wide state, and one uninstrumented earlier in a test process (OpenLLMetry's) keeps
parenting LangChain's spans.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse import agent

from tests.interop import CORPUS, QUESTION, SCORES, scripted_app


def _chunks() -> list[dict[str, Any]]:
    """CORPUS as the retriever returns it: ids C1..C3, SCORES, metadata."""
    return [{"id": f"C{i}", "content": text, "score": score, "metadata": dict(meta)}
            for i, ((text, meta), score) in enumerate(zip(CORPUS, SCORES, strict=True), 1)]  # fmt: skip


def _exporter(protocol: str, endpoint: str, token: str) -> Any:
    if protocol == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

        return Http(endpoint=f"{endpoint}/v1/traces", headers={"Authorization": f"Bearer {token}"})
    from grpc import Compression
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

    gzip = Compression.Gzip if protocol == "grpc-gzip" else None
    return Grpc(
        endpoint=endpoint, insecure=True, headers={"authorization": f"Bearer {token}"}, compression=gzip
    )


def main(protocol: str, endpoint: str, token: str) -> dict[str, Any]:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from tests.test_interop_instrumentations import _string_chain

    provider = TracerProvider(resource=Resource.create({"service.name": "interop-app"}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(BatchSpanProcessor(_exporter(protocol, endpoint, token)))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    agent.configure(exporter="none", tracer_provider=provider)
    answer = scripted_app(_chunks())
    answers = [answer(QUESTION), answer(QUESTION)]
    LangChainInstrumentor().instrument(tracer_provider=provider)
    chain = _string_chain()
    answers += [chain.invoke(QUESTION), chain.invoke(QUESTION)]
    provider.shutdown()  # the agent's deferred spans first, then the batch processor's export
    spans = memory.get_finished_spans()
    roots = sorted((s for s in spans if s.parent is None), key=lambda s: s.start_time)
    return {
        "answers": answers,
        "roots": [format(s.context.trace_id, "032x") for s in roots],
        "spans": len(spans),
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])), flush=True)
