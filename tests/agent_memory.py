"""The agent writing into the OTel SDK's in-memory exporter: what the agent's span tests share.

``mem`` configures the agent with an :class:`InMemorySpanExporter` (a short export delay)
and shuts it down after the test; :func:`spans_by_name` flushes and groups what it holds.
:func:`under_app_provider` runs the agent with ``exporter="none"`` under an application's
provider whose processor writes into an in-memory exporter.
Registered for every test module through ``pytest_plugins`` in conftest.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import configure, flush, shutdown


@pytest.fixture()
def mem() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, service_name="test-svc", schedule_delay_ms=50)
    yield exporter
    shutdown()


def spans_by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    """The finished spans by name, after a flush of the agent."""
    flush()
    out: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        out.setdefault(span.name, []).append(span)
    return out


@contextlib.contextmanager
def under_app_provider(
    provider: TracerProvider | None = None, **options: Any
) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """The agent configured with ``exporter="none"`` and ``options`` under ``provider`` (a new
    ``TracerProvider`` by default), to which a ``SimpleSpanProcessor`` writing into an in-memory
    exporter is added first; yields (provider, exporter) and shuts the agent down after. Spans
    reach the exporter when ``flush()`` ends them (``schedule_delay_ms`` is an hour unless given)."""
    exporter = InMemorySpanExporter()
    provider = provider or TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure(**{"schedule_delay_ms": 3_600_000, **options, "exporter": "none", "tracer_provider": provider})
    try:
        yield provider, exporter
    finally:
        shutdown()
