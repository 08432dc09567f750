"""A threaded HTTP server on its own daemon thread, shared by the collector's endpoints.

The metrics endpoint (``MetricsServer``), the Alertmanager receiver
(``AlertmanagerReceiver``) and the OTLP/HTTP receiver (``OtlpHttpReceiver``)
differ only in their request handlers; binding, serving in the background,
shutting down, answering (:func:`send`) and the quiet handler base live here once.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

__all__ = ["BackgroundHTTPServer", "QuietHandler", "send"]

_S = TypeVar("_S", bound="BackgroundHTTPServer")


def send(
    req: BaseHTTPRequestHandler, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None
) -> None:
    """Answer ``req``: the status, Content-Type and Content-Length, any other ``headers``, the body."""
    req.send_response(code)
    req.send_header("Content-Type", ctype)
    req.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        req.send_header(name, value)
    req.end_headers()
    req.wfile.write(body)


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that writes no line per request to stderr (the endpoints count their
    requests in metrics instead)."""

    def log_message(self, *args: Any) -> None:
        pass


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
