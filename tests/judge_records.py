"""Judge input records for the judge tests: an answer against chunks given as their texts.

The chunks get the ids ``C1``, ``C2``... in order, so a marker ``[1]`` in the answer cites the
first one either way.
"""

from __future__ import annotations

from typing import Any

from ragpulse.collector.contract import Judge

__all__ = ["judged_claims", "record"]


def record(answer: str, *chunks: str, query: str = "q?") -> dict[str, Any]:
    """The judge input record of ``answer`` against ``chunks`` (trace id ``t``)."""
    return {
        "trace_id": "t",
        "query": query,
        "answer": answer,
        "chunks": [{"id": f"C{i}", "content": text} for i, text in enumerate(chunks, 1)],
    }


def judged_claims(judge: Judge, answer: str, *chunks: str, query: str = "q?") -> list[dict[str, Any]]:
    """The claims ``judge`` finds in ``answer`` against ``chunks``, with their verdicts."""
    return judge.judge(record(answer, *chunks, query=query))["claims"]
