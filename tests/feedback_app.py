"""The small traced RAG application the feedback tests run (embedded and through Kafka)."""

from __future__ import annotations

from ragpulse.agent import current_rag, generation, retrieval, trace_rag

CHUNKS = [
    {"id": "C1", "content": "Logs are kept for five years.", "score": 0.9, "metadata": {"status": "current"}},
    {"id": "C2", "content": "Holds must be released first.", "score": 0.8, "metadata": {"status": "current"}},
]


@retrieval
def search(query: str) -> list[dict]:
    return CHUNKS


@generation(model="m", provider="p")
def complete(prompt: str) -> str:
    return "Logs are kept for five years [1]."


@trace_rag
def answer(query: str, session_id: str = "", give_feedback: bool = False) -> str | None:
    """One RAG call (``session_id`` becomes the root's ``session.id``); returns its trace id."""
    search(query)
    complete(query)
    if give_feedback:
        current_rag().feedback(-1.0, comment="wrong")
    return current_rag().trace_id
