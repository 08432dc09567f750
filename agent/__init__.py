"""ragpulse agent SDK: trace RAG calls (query, chunks, answer, citations) as OpenTelemetry spans.

::

    from ragpulse.agent import configure, trace_rag, retrieval, generation, cite

    configure(service_name="support-bot", exporter="kafka", kafka_bootstrap_servers="kafka:9092")

    @retrieval
    def search(query: str, top_k: int = 5) -> list[dict]: ...

    @generation(model="gpt-4o-mini", provider="openai")
    def complete(prompt: str) -> str: ...

    @trace_rag
    def answer(query: str) -> str:
        chunks = search(query)
        return complete(build_prompt(query, chunks))   # "... [1] ... [2]"

Conversational and agentic calls: a ``history``/``messages`` argument of the ``@trace_rag``
function is the conversation before the current turn (or ``set_conversation(...)``), ``@tool``
marks a tool call, ``@agent_step`` an agent step, and the chunks a ``@generation`` is given (its
``chunks`` argument) are what the answer's ``[n]`` markers refer to.

Importing this package is cheap (the OTel SDK loads on first use) and never
pulls in the collector's dependencies. See docs/agent.md.
"""

from . import decorators as _decorators
from .decorators import *  # noqa: F403 - its __all__: the decorators, cite, current_rag, the handles
from .feedback import feedback
from .runtime import configure, flush, shutdown, stats

__all__ = ["configure", *_decorators.__all__, "feedback", "flush", "shutdown", "stats"]
