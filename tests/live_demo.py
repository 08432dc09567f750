"""The demo app's live traffic into a real embedded collector, for the monitoring mixin's tests.

:class:`LiveDemo` runs the policy assistant (the public agent API, embedded
exporter) against an :class:`EmbeddedCollector` (assembly, sampler at rate 1,
local judge, chDB, Prometheus ``/metrics`` on a free port). Traffic is served
in a background thread at a fixed rate, and its failure rates can be switched
while it runs (the generator's :class:`GenerationRates`), which is how a test
makes faithfulness drop and recover.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

SERVICE = "policy-assistant"


class LiveDemo:
    """Owns one embedded collector and one traffic thread; :meth:`stop` ends both."""

    def __init__(self, db_path: Path, *, rate: float = 40.0, seed: int = 7, judge: Any = "local") -> None:
        """``judge``: the collector's judge (a spec or a judge object, see EmbeddedCollector)."""
        from ragpulse.collector.demo.variants import PRICES, VARIANTS
        from ragpulse.collector.embedded.collector import EmbeddedCollector
        from ragpulse.policy_rag import PolicyAssistant, TrafficModel, load_corpus

        config = {"sampling": {"rate": 1.0}, "cost": {"prices": PRICES}}
        self.collector = EmbeddedCollector(db_path, config=config, metrics_port=0, judge=judge)
        corpus = load_corpus()
        # One variant (priced, as the demo's): the variant panels and the cost series have data.
        name, model, _ = VARIANTS[0]
        self.assistant = PolicyAssistant(corpus, seed=seed, model=model, variant=name)
        self.traffic = TrafficModel(corpus, seed=seed + 4)
        self.rate = rate
        self.served = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def metrics_url(self) -> str:
        assert self.collector.metrics_url
        return self.collector.metrics_url

    def start(self) -> LiveDemo:
        import ragpulse.agent as agent

        self.collector.start()
        agent.configure(service_name=SERVICE, exporter="embedded", corpus_version="policies-2026.11")
        return self

    def serve(self, n: int) -> None:
        """Serve ``n`` questions now, as fast as possible."""
        for req in self.traffic.requests(n):
            self.assistant.answer(req.question)
            self.served += 1

    def serve_sessions(self, n: int) -> None:
        """Serve ``n`` turns of chat traffic now (sessions with follow-ups, re-asks and the tool route)."""

        def ask(req: Any, history: list[dict[str, Any]]) -> str:
            return self.assistant.answer(
                req.question, history=history, session_id=req.session_id, user_id=req.user_id
            )

        for _ in self.traffic.conversations(n, ask):
            self.served += 1

    def set_rates(self, **rates: float) -> None:
        """Switch the generator's failure rates (GenerationRates fields); the rest become 0."""
        from ragpulse.policy_rag import GenerationRates

        fields = {
            "missing_condition": 0.0,
            "wrong_citation": 0.0,
            "hallucinated_number": 0.0,
            "false_refusal": 0.0,
        }
        self.assistant.generator.rates = GenerationRates(**{**fields, **rates})

    def run_in_background(self) -> None:
        """Serve questions at ``rate`` per second until :meth:`stop`."""

        def loop() -> None:
            t0 = time.monotonic()
            for req in self.traffic.requests(10**9):
                if self._stop.is_set():
                    return
                delay = t0 + self.served / self.rate - time.monotonic()
                if delay > 0 and self._stop.wait(delay):
                    return
                self.assistant.answer(req.question)
                self.served += 1

        self._thread = threading.Thread(target=loop, name="live-demo-traffic", daemon=True)
        self._thread.start()

    def flush(self) -> bool:
        import ragpulse.agent as agent

        agent.flush(30.0)
        return bool(self.collector.flush(timeout=60.0))

    def rejudge(self, judge: Any, limit: int = 100, exclude: Any = ()) -> list[str]:
        """Judge up to ``limit`` stored traces again with a second ``judge`` (stored like the first's),
        leaving out the trace ids in ``exclude``; returns the trace ids judged."""
        import json

        from ragpulse.collector.judge.service.worker import JudgeWorker

        skip = ",".join(f"'{t}'" for t in exclude if all(c in "0123456789abcdef" for c in t))
        where = f"WHERE trace_id NOT IN ({skip})" if skip else ""
        rows = self.query(
            "SELECT trace_id, service, toUnixTimestamp64Nano(time), span_count, query, answer, chunk_ids, "
            "chunk_contents, chunk_scores, chunk_metadata, citation_doc_ids, citation_markers, citation_starts, "
            f"citation_ends FROM {{db}}.rag_traces FINAL {where} ORDER BY trace_id LIMIT {int(limit)}"
        )
        messages = []
        for tid, svc, t, spans, q, a, ids, contents, scores, metas, c_ids, c_marks, c_starts, c_ends in rows:
            chunks = [
                {"id": i, "content": c, "score": sc, "metadata": json.loads(m) if m else {}}
                for i, c, sc, m in zip(ids, contents, scores, metas, strict=True)
            ]
            cites = [
                {"doc_id": d, "marker": mk, "start": st, "end": en}
                for d, mk, st, en in zip(c_ids, c_marks, c_starts, c_ends, strict=True)
            ]
            messages.append(
                {"trace_id": tid, "service": svc, "time_unix_nano": t, "span_count": spans, "query": q,
                 "answer": a, "chunks": chunks, "citations": cites}
            )  # fmt: skip
        worker = JudgeWorker(judge, self.collector.storage, self.collector.metrics)
        worker.store(worker.judge_messages(messages))
        return [m["trace_id"] for m in messages]

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self.collector.storage.query(sql)

    def stop_traffic(self) -> None:
        """End the background traffic (the collector keeps running)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def stop(self) -> None:
        import ragpulse.agent as agent

        self.stop_traffic()
        agent.flush(30.0)
        self.collector.stop()
