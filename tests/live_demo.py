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

    def __init__(self, db_path: Path, *, rate: float = 40.0, seed: int = 7) -> None:
        from ragpulse.collector.embedded.collector import EmbeddedCollector
        from ragpulse.policy_rag import PolicyAssistant, TrafficModel, load_corpus

        self.collector = EmbeddedCollector(db_path, config={"sampling": {"rate": 1.0}}, metrics_port=0)
        corpus = load_corpus()
        self.assistant = PolicyAssistant(corpus, seed=seed)
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

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self.collector.storage.query(sql)

    def stop(self) -> None:
        import ragpulse.agent as agent

        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        agent.flush(30.0)
        self.collector.stop()
