"""A threaded HTTP server on its own daemon thread, shared by the collector's endpoints.

The metrics endpoint (``MetricsServer``) and the OTLP/HTTP receiver
(``OtlpHttpReceiver``) differ only in their request handlers; binding,
serving in the background and shutting down live here once.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

__all__ = ["BackgroundHTTPServer"]

_S = TypeVar("_S", bound="BackgroundHTTPServer")


class BackgroundHTTPServer:
    """Binds in ``_bind`` (port 0 picks a free port); ``start`` serves on a daemon thread."""

    thread_name = "ragpulse-http"

    def _bind(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self._server.server_address[0]}:{self.port}"

    def start(self: _S) -> _S:
        self._thread = threading.Thread(target=self._server.serve_forever, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
