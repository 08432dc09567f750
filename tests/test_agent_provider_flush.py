"""The application provider's own ``force_flush()`` / ``shutdown()`` deliver the agent's deferred spans.

Under ``exporter="none"`` the agent ends its spans on a thread of its own after the call
returns (the request path stays cheap). An application, a serverless layer or a test that
flushes its provider right after a request must still find every span of every call that had
returned: the agent's flush hook (ragpulse.agent.flush_hook) ends the queued spans first. The
agent's thread never runs here on its own: ``schedule_delay_ms`` is an hour, so no sleep or
timing can make these pass. Every processor layout the SDK offers is tried with the SDK's
in-memory exporter: a simple or a batch processor, several of them, processors run at once
(``ConcurrentMultiSpanProcessor``), and a provider whose methods cannot be wrapped (the hook's
fast path off: the agent then ends its spans on the request path and says so once).
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
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


class UnwrappableProvider(TracerProvider):
    """An SDK provider whose methods cannot be replaced on the instance (as a vendor's provider
    class with read-only attributes would): the hook cannot wrap them and must fall back."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("force_flush", "shutdown"):
            raise AttributeError(f"{name} is read-only")
        super().__setattr__(name, value)


def _hour_batch(exporter: InMemorySpanExporter) -> BatchSpanProcessor:
    return BatchSpanProcessor(exporter, schedule_delay_millis=3_600_000)


# name -> (the application's provider, a processor per exporter); one call gives 3 spans to each exporter
LAYOUTS: dict[str, tuple[Callable[[], TracerProvider], list[Callable[[InMemorySpanExporter], Any]]]] = {
    "simple": (TracerProvider, [SimpleSpanProcessor]),
    "batch": (TracerProvider, [_hour_batch]),
    "simple_and_batch": (TracerProvider, [SimpleSpanProcessor, _hour_batch]),
    "concurrent_batch": (lambda: TracerProvider(active_span_processor=ConcurrentMultiSpanProcessor()), [_hour_batch]),
    "concurrent_two_batches": (
        lambda: TracerProvider(active_span_processor=ConcurrentMultiSpanProcessor(1)),
        [_hour_batch, _hour_batch],
    ),
    "concurrent_simple_and_batch": (
        lambda: TracerProvider(active_span_processor=ConcurrentMultiSpanProcessor(4)),
        [SimpleSpanProcessor, _hour_batch],
    ),
    "fast_path_off_batch": (UnwrappableProvider, [_hour_batch]),
    "fast_path_off_simple_and_batch": (UnwrappableProvider, [SimpleSpanProcessor, _hour_batch]),
}  # fmt: skip


@pytest.mark.parametrize("end", ["force_flush", "shutdown"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_providers_flush_and_shutdown_deliver_every_deferred_span(layout: str, end: str) -> None:
    """3 of 3 spans of a call at every exporter after the provider's own force_flush or shutdown."""
    make_provider, processors = LAYOUTS[layout]
    provider = make_provider()
    exporters = [InMemorySpanExporter() for _ in processors]
    with _app(provider, *(make(e) for make, e in zip(processors, exporters, strict=True))):
        assert answer("how long are logs kept?") == ANSWER
        if not layout.startswith("fast_path_off"):
            assert all(e.get_finished_spans() == () for e in exporters)  # deferred: only queued
        result = getattr(provider, end)()
        assert result is (True if end == "force_flush" else None)
        for e in exporters:
            _check(e.get_finished_spans())
        if end == "force_flush":
            answer("and holds?")
            provider.shutdown()
            for e in exporters:
                _check(e.get_finished_spans(), calls=2)


def test_fast_path_off_ends_spans_on_the_request_path_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporter = InMemorySpanExporter()
    provider = UnwrappableProvider()
    with caplog.at_level(logging.WARNING, logger="ragpulse.agent"):
        for _ in range(2):  # reconfiguring on the same provider does not warn again
            agent.configure(exporter="none", tracer_provider=provider, schedule_delay_ms=3_600_000)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        try:
            answer("how long are logs kept?")
            _check(exporter.get_finished_spans())  # ended on the request path: no flush needed
        finally:
            agent.shutdown()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "cannot wrap" in r.getMessage()]
    assert len(warnings) == 1, caplog.text
    assert "UnwrappableProvider" in warnings[0].getMessage()
    assert "request path" in warnings[0].getMessage()
    assert type(provider).force_flush is TracerProvider.force_flush and "force_flush" not in vars(provider)
    provider.shutdown()


def test_agent_flush_still_works_and_one_hook_per_provider() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    own_flush = provider.force_flush
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
    # wrapped once: the wrapper calls the provider's own method, not another wrapper
    assert provider.force_flush.__wrapped__ == own_flush
    provider.shutdown()


EXIT_SCRIPT = """
import sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from ragpulse import agent

class Lines(SpanExporter):
    def export(self, spans):
        with open(sys.argv[1], "a") as f:
            f.writelines(s.name + "\\n" for s in spans)
        return SpanExportResult.SUCCESS

agent.configure(exporter="none", schedule_delay_ms=3_600_000)  # the global provider, not set yet

@agent.retrieval
def search(query):
    return [{"id": "C1", "content": "Logs are kept for five years."}]

@agent.trace_rag
def answer(query):
    search(query)
    return "five years"

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(Lines(), schedule_delay_millis=3_600_000))
trace.set_tracer_provider(provider)
for _ in range(3):
    answer("how long are logs kept?")
"""


def test_spans_deferred_at_interpreter_exit_reach_a_provider_made_after_configure(tmp_path: Path) -> None:
    """The provider shuts down at exit through the handler it registered when it was made
    (after configure() here, so it would run before the agent's own); the hook's handler
    runs before it and ends the queued spans. (A ConcurrentMultiSpanProcessor cannot shut down
    at exit at all: its thread pool refuses work once the interpreter is exiting.)"""
    out = tmp_path / "spans.txt"
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(EXIT_SCRIPT))
    proc = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(out.read_text().split()) == ["answer"] * 3 + ["search"] * 3, proc.stderr
