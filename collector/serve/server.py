"""One HTTP port for ``/metrics`` (Prometheus text) and the health endpoints."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..core.metrics import Metrics
from .health import DEFAULT_STALL_S, Health
from .http_server import BackgroundHTTPServer, QuietHandler, send

__all__ = ["MetricsServer"]

_TEXT = "text/plain; charset=utf-8"


class MetricsServer(BackgroundHTTPServer):
    """``/metrics`` from ``metrics``, ``/healthz`` and ``/readyz`` from a :class:`Health`
    over ``metrics.polls`` and ``ready``."""

    thread_name = "ragpulse-metrics"

    def __init__(
        self,
        metrics: Metrics,
        host: str = "127.0.0.1",
        port: int = 0,
        ready: Callable[[], bool] | None = None,
        stall_s: float = DEFAULT_STALL_S,
    ) -> None:
        self.metrics = metrics
        self.health = Health(metrics.polls, ready, stall_s)
        routes: dict[str, Callable[[], tuple[int, bytes, str]]] = {
            "/metrics": lambda: (200, metrics.render(), CONTENT_TYPE_LATEST),
            "/healthz": lambda: (*self.health.healthz(), _TEXT),
            "/readyz": lambda: (*self.health.readyz(), _TEXT),
        }

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server API
                route = routes.get(self.path.split("?", 1)[0])
                send(self, *(route() if route else (404, b"not found\n", _TEXT)))

        self._bind(host, port, Handler)
