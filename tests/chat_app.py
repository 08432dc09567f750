"""A scripted chat application on the public agent API, for the session tests.

Each turn retrieves the given chunks and answers with the reply the test scripts; the history
of the turn's session goes in as the ``history`` argument (OpenAI-style messages), so the
agent records it as the conversation before the turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ragpulse.agent import generation, retrieval, trace_rag

Chat = Callable[[str, list[dict], str, str], str]


def chat_app(retrieved: list[dict]) -> Chat:
    """``chat(query, history, session_id, reply)``: one retrieval of ``retrieved``, one generation
    given what it retrieved."""

    @retrieval
    def search(query: str) -> list[dict]:
        return retrieved

    @generation(model="m", provider="p")
    def complete(prompt: str, chunks: list[dict], reply: str) -> str:
        return reply

    @trace_rag
    def chat(query: str, history: list[dict], session_id: str, reply: str) -> str:
        return complete(query, search(query), reply)

    return chat


def serve_conversations(chat: Chat, turns: Iterable[tuple[str, str, str]]) -> None:
    """Serve ``(session, question, reply)`` turns in order, each with its session's history."""
    histories: dict[str, list[dict]] = {}
    for session, question, reply in turns:
        history = histories.setdefault(session, [])
        chat(question, list(history), session, reply)
        history += [{"role": "user", "content": question}, {"role": "assistant", "content": reply}]
