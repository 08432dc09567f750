"""The application provider's own ``force_flush()`` / ``shutdown()`` deliver the agent's deferred spans.

Under ``exporter="none"`` the agent ends its spans on a thread of its own after the call
returns (the request path stays cheap). An application, a serverless layer or a test that
flushes its provider right after a request must still find every span of every call that had
returned: the agent's flush hook (ragpulse.agent.flush_hook) ends the queued spans first. The
agent's thread never runs here on its own: ``schedule_delay_ms`` is an hour, so no sleep or
timing can make these pass.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ConcurrentMultiSpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse import agent

CHUNKS = [
    {"id": "C1", "content": "Logs are kept for five years.", "score": 0.91, "metadata": {"team": "ops"}},
    {"id": "C2", "content": "Legal holds must be released first.", "score": 0.82, "metadata": {}},
]
ANSWER = "Logs are kept for five years [1]. Holds are released first [C2]."


@agent.retrieval
def search(query: str) -> list[dict[str, Any]]:
    return CHUNKS


@agent.generation(model="gpt-test", provider="openai")
def complete(prompt: str) -> str:
    return ANSWER


@agent.trace_rag
def answer(query: str) -> str:
    search(query)
    return complete(query)


@contextlib.contextmanager
def _app(provider: TracerProvider, *processors: Any) -> Iterator[None]:
    """The application's provider with ``processors`` added before ragpulse is configured on it."""
    for p in processors:
        provider.add_span_processor(p)
    agent.configure(exporter="none", tracer_provider=provider, schedule_delay_ms=3_600_000)
    try:
        yield
    finally:
        agent.shutdown()


def _check(spans: Any, calls: int = 1) -> None:
    """``calls`` complete calls: three spans each, with their attributes and citation events."""
    by_name: dict[str, list[Any]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    assert {k: len(v) for k, v in by_name.items()} == {"answer": calls, "search": calls, "complete": calls}
    for root in by_name["answer"]:
        assert root.attributes["output.value"] == ANSWER
        assert root.attributes["rag.root"] is True
        cited = [e.attributes["rag.citation.document.id"] for e in root.events if e.name == "rag.citation"]
        assert cited == ["C1", "C2"]
    for ret in by_name["search"]:
        assert ret.attributes["retrieval.documents.1.document.id"] == "C2"
        assert json.loads(ret.attributes["retrieval.documents.0.document.metadata"]) == {"team": "ops"}
    for gen in by_name["complete"]:
        assert gen.attributes["llm.model_name"] == "gpt-test"


def test_simple_processor_provider_shutdown() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    with _app(provider, SimpleSpanProcessor(exporter)):
        for _ in range(3):
            answer("how long are logs kept?")
        provider.shutdown()
        _check(exporter.get_finished_spans(), calls=3)


@pytest.mark.parametrize("end", ["force_flush", "shutdown"])
def test_batch_processor_added_first(end: str) -> None:
    """A BatchSpanProcessor (its own hour-long delay) added before ragpulse: the hook still runs first,
    so the batch processor's flush or shutdown exports the spans the hook just ended."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    with _app(provider, BatchSpanProcessor(exporter, schedule_delay_millis=3_600_000)):
        answer("how long are logs kept?")
        answer("and holds?")
        getattr(provider, end)()
        _check(exporter.get_finished_spans(), calls=2)
        if end == "force_flush":
            provider.shutdown()


def _simple(exporter: InMemorySpanExporter) -> tuple[TracerProvider, Any]:
    """A plain provider and a SimpleSpanProcessor: the hook goes first among its processors."""
    return TracerProvider(), SimpleSpanProcessor(exporter)


def _concurrent(exporter: InMemorySpanExporter) -> tuple[TracerProvider, Any]:
    """A provider whose processors run concurrently, so the hook cannot go first: it is added last
    and, after ending the queued spans, flushes the provider once more so the processors before it
    (here a BatchSpanProcessor with an hour-long delay) see them."""
    provider = TracerProvider(active_span_processor=ConcurrentMultiSpanProcessor(2))
    return provider, BatchSpanProcessor(exporter, schedule_delay_millis=3_600_000)


@pytest.mark.parametrize("setup", [_simple, _concurrent], ids=["simple_processor", "hook_cannot_go_first"])
def test_provider_force_flush(setup: Any) -> None:
    exporter = InMemorySpanExporter()
    provider, processor = setup(exporter)
    with _app(provider, processor):
        assert answer("how long are logs kept?") == ANSWER
        assert exporter.get_finished_spans() == ()  # deferred: the request path only queued them
        assert provider.force_flush()
        _check(exporter.get_finished_spans())
        provider.shutdown()


def test_agent_flush_still_works_and_one_hook_per_provider() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(3):  # reconfiguring re-points the provider's one hook at the new configuration
        agent.configure(exporter="none", tracer_provider=provider, schedule_delay_ms=3_600_000)
    try:
        answer("how long are logs kept?")
        assert agent.flush()
        _check(exporter.get_finished_spans())
        answer("again")
        assert provider.force_flush()
        _check(exporter.get_finished_spans(), calls=2)
    finally:
        agent.shutdown()
    hooks = [
        p for p in provider._active_span_processor._span_processors if type(p).__name__ == "ProviderFlushHook"
    ]
    assert len(hooks) == 1
    provider.shutdown()
