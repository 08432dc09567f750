"""The agent writing into the OTel SDK's in-memory exporter: the fixture the agent's span tests share.

``mem`` configures the agent with an :class:`InMemorySpanExporter` (a short export delay)
and shuts it down after the test; :func:`spans_by_name` flushes and groups what it holds.
Registered for every test module through ``pytest_plugins`` in conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
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
