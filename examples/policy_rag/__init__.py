"""The demo policy assistant: a small but real RAG application instrumented with ragpulse.

``PolicyAssistant().answer(question)`` retrieves with BM25 over a synthetic
policy corpus (current, superseded and unofficial texts) and answers with a
scripted, seeded generator that cites its chunks and makes the failure modes
of why-rag-evaluation-is-hard at realistic rates; it is also a chat assistant
(follow-ups rewritten from the conversation, an agent with a tool for questions
about the asker's own record). ``ragpulse demo`` serves a :class:`TrafficModel`
of conversations through it. Importing the corpus,
retriever, generator or traffic modules does not import the agent; only
:class:`PolicyAssistant` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .chat import ChatRates
from .corpus import Chunk, Corpus, QueryTemplate, load_corpus
from .generator import EXPECTED_JUDGMENT, GeneratedAnswer, GenerationRates, InjectedMode, ScriptedGenerator
from .retriever import PolicyRetriever, RetrievedChunk
from .traffic import Request, TrafficModel

if TYPE_CHECKING:
    from .app import PolicyAssistant

__all__ = [
    "Chunk",
    "Corpus",
    "QueryTemplate",
    "load_corpus",
    "EXPECTED_JUDGMENT",
    "GeneratedAnswer",
    "GenerationRates",
    "InjectedMode",
    "ScriptedGenerator",
    "PolicyRetriever",
    "RetrievedChunk",
    "Request",
    "TrafficModel",
    "ChatRates",
    "PolicyAssistant",
]


def __getattr__(name: str) -> Any:
    if name == "PolicyAssistant":
        from .app import PolicyAssistant

        return PolicyAssistant
    raise AttributeError(name)
