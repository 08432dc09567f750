"""The hand-written RAG cases of bench/judge_rag_answers.py as judged traces in a store.

Answers written from their chunks in other words (and the same answers with one part changed)
give the local judge's claim probabilities something to decide, where the demo's answers repeat
their chunks' sentences word for word: a judge with another claim head moves verdicts on them,
and some answers sit near the response rule's boundary.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["store_rag_cases"]


def store_rag_cases(storage: Any) -> str:
    """The hand-written RAG cases (bench/judge_rag_answers.py), each answer faithful and with one
    part changed, stored as traces and judged by the packaged local judge through the
    collector's worker; returns the judge id."""
    from ragpulse.collector.core.metrics import Metrics
    from ragpulse.collector.core.model import Chunk, RagTrace
    from ragpulse.collector.judge import get_judge
    from ragpulse.collector.judge.service.worker import JudgeWorker

    from bench import judge_rag_answers as bench

    now = time.time_ns()  # within the tables' TTL
    traces = []
    for name, cases in bench.CASES.items():
        for case in cases:
            for kind in ("answer", "hallucinated"):
                t = RagTrace(f"{len(traces):032x}")
                t.service, t.time, t.span_count = name, now - (len(traces) + 1) * 1_000_000_000, 3
                t.end_time = t.time + 500_000_000
                t.query, t.answer = case["query"], case[kind]
                t.chunks = [Chunk(f"c{k + 1}", text, 0.8, "") for k, text in enumerate(case["chunks"])]
                traces.append(t)
    storage.insert_traces(traces)
    worker = JudgeWorker(get_judge("local"), storage, Metrics())
    worker.store(worker.judge_messages([t.judge_message() for t in traces]))
    return worker.judge.judge_id
