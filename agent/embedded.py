"""The in-process hand-off between the agent and an embedded collector.

With ``configure(exporter="embedded")`` the agent's span processor passes each
finished batch of spans to the sink installed here instead of sending them
over the network. The embedded collector (``ragpulse.collector``) installs its
sink when it starts; the agent never imports the collector.

Contract for sinks: ``submit_spans`` is called from the agent's export thread,
never from the application's request path; it must return quickly (enqueue,
don't process) and must not raise. Spans submitted while no sink is installed
are dropped and counted by the exporter.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "EmbeddedSink",
    "EmbeddedSpanExporter",
    "install_embedded_sink",
    "uninstall_embedded_sink",
    "current_embedded_sink",
]


@runtime_checkable
class EmbeddedSink(Protocol):
    """Receives finished spans in the same process."""

    def submit_spans(self, spans: Sequence[ReadableSpan]) -> None:
        """Take ownership of a batch of finished spans; enqueue and return."""


_lock = threading.Lock()
_sink: EmbeddedSink | None = None


def install_embedded_sink(sink: EmbeddedSink) -> None:
    """Make ``sink`` the receiver of embedded-exporter spans (replaces any previous one)."""
    global _sink
    if not isinstance(sink, EmbeddedSink):
        raise TypeError("an embedded sink needs a submit_spans(spans) method")
    with _lock:
        _sink = sink


def uninstall_embedded_sink(sink: EmbeddedSink | None = None) -> None:
    """Remove the installed sink (only if it is ``sink``, when given)."""
    global _sink
    with _lock:
        if sink is None or _sink is sink:
            _sink = None


def current_embedded_sink() -> EmbeddedSink | None:
    """The installed sink, or None."""
    return _sink


class EmbeddedSpanExporter:
    """The ``exporter="embedded"`` exporter: hands each finished batch to the installed sink.

    Runs on the agent's export thread. With no sink installed, or when the sink
    raises, the batch is dropped and counted (``stats()["dropped"]["no_sink"]``
    / ``["export_failed"]``); the application never notices.
    """

    counts_own_drops = True

    def __init__(self, stats: Any = None):
        self._stats = stats

    def export(self, spans: Sequence[ReadableSpan]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        sink = _sink
        if sink is None:
            if self._stats is not None:
                self._stats.drop("no_sink", len(spans))
            return SpanExportResult.FAILURE
        try:
            sink.submit_spans(list(spans))
        except Exception:  # noqa: BLE001 - the contract says sinks don't raise; count it if one does
            if self._stats is not None:
                self._stats.drop("export_failed", len(spans))
            return SpanExportResult.FAILURE
        if self._stats is not None:
            self._stats.add("spans_exported", len(spans))
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        return None
