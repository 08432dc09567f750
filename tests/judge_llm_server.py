"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies, for
driving the LLM judge through litellm in tests and benchmarks.

``POST /v1/chat/completions`` calls ``responder(body, n)`` (n = 0-based request
number) which returns a :class:`Reply`: status, headers, a JSON body or raw
text, and a delay. Every request body is recorded. The server runs in a thread
of the current process and is stopped by :meth:`ScriptedLLMServer.stop`.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragpulse.collector.serve.http_server import BackgroundHTTPServer, QuietHandler, send

__all__ = ["Reply", "ScriptedLLMServer", "completion", "claims_in", "chunk_ids_in", "all_supported"]


@dataclass
class Reply:
    """One scripted HTTP reply."""

    status: int = 200
    body: Any = None  # dict -> JSON; str -> raw text
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion(content: str, prompt_tokens: int = 1000, completion_tokens: int = 100) -> dict[str, Any]:
    """An OpenAI chat.completion body whose message is ``content``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake-judge",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def claims_in(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims listed in a judge request (one JSON object per line)."""
    text = _user_text(body)
    section = text.split("CLAIMS EXTRACTED FROM THE ANSWER", 1)[1]
    return [json.loads(line) for line in section.splitlines() if line.startswith('{"id"')]


def chunk_ids_in(body: dict[str, Any]) -> list[str]:
    """Chunk ids in the order the request presents them."""
    return re.findall(r'CHUNK id="([^"]*)"', _user_text(body))


def all_supported(body: dict[str, Any], n: int) -> Reply:
    """Reply that every claim is supported by the chunks it cites (first chunk when uncited)."""
    ids = chunk_ids_in(body)
    claims = [
        {
            "id": c["id"],
            "verdict": "supported",
            "supporting_chunk_ids": c["cited_chunk_ids"] or ids[:1],
            "on_topic": True,
            "omitted_condition": None,
            "source": None,
        }
        for c in claims_in(body)
    ]
    return Reply(body=completion(json.dumps({"abstained": False, "answerable": True, "claims": claims})))


class ScriptedLLMServer(BackgroundHTTPServer):
    """OpenAI-compatible server; ``url`` is the ``api_base`` to give litellm."""

    thread_name = "scripted-llm"

    def __init__(
        self, responder: Callable[[dict[str, Any], int], Reply] = all_supported, port: int = 0
    ) -> None:
        """``port`` 0 picks a free one; a given port lets a test bring the "provider" back where it was."""
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        server = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                super().finish()

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    n = len(server.requests)
                    server.requests.append(body)
                reply = server.responder(body, n)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body or {})
                data = payload.encode()
                try:
                    send(self, reply.status, data, "application/json", reply.headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self._bind("127.0.0.1", port, Handler)

    @property
    def url(self) -> str:
        return f"{super().url}/v1"

    def stop(self) -> None:
        """Stop listening and cut every open (keep-alive) connection, as a provider that goes away."""
        super().stop()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
