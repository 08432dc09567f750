"""Steady demo-app load through a real Kafka broker into a real ``ragpulse collect``, sampled.

:class:`SoakRun` owns a broker (:class:`tests.services.KafkaBroker`), one
``ragpulse collect`` process (ingest and the local judge) and a traffic thread
serving the demo policy assistant at a fixed rate with the agent's Kafka
exporter. :meth:`SoakRun.sample` reads what can grow without bound: the
collector's resident memory, open file descriptors and threads (``/proc``), its
assembly buffer and consumer lag (its ``/metrics``), and the agent's records
sent but not yet acknowledged. ``bench/soak.py`` runs it for 30 minutes and
plots the samples; ``tests/test_soak.py`` runs it for 3 minutes and asserts
that no count grows monotonically.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from tests.background import Background
from tests.services import KafkaBroker
from tests.test_collector_kafka import CollectorProcess

__all__ = ["DemoTraffic", "Sample", "SoakRun", "grows_monotonically", "scrape"]

SERVICE = "policy-assistant"


@dataclass
class Sample:
    """One reading, ``t`` seconds after traffic started."""

    t: float
    rss_bytes: int  # collector VmRSS
    fds: int  # collector open file descriptors
    fds_other: int  # those that are not a thread's own /proc/PID/task/TID file (chDB keeps three per thread)
    threads: int  # collector threads
    assembly_buffer: int  # partial traces buffered (ragpulse_assembly_buffer_traces)
    spans_lag: int  # records behind the end of the spans topic (ragpulse_consumer_lag)
    judge_lag: int  # records behind the end of the judge topic
    producer_in_flight: int  # agent records sent, not yet acknowledged
    app_rss_bytes: int  # the application's (this process's) VmRSS
    served: int  # requests the application served
    stored: int  # ragpulse_traces_stored_total
    judged: int  # ragpulse_traces_judged_total

    @classmethod
    def header(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def row(self) -> list[Any]:
        return [getattr(self, f.name) for f in fields(self)]


def scrape(url: str) -> dict[str, float]:
    """``/metrics`` summed by metric name and, for the consumer lag, by topic (``name{topic}``)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = s.name
            if s.name == "ragpulse_consumer_lag":
                key = f"{s.name}{{{s.labels.get('topic', '')}}}"
            out[key] = out.get(key, 0.0) + s.value
    return out


def _status_kb(pid: int | str, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _target(link: str) -> str:
    try:
        return os.readlink(link)
    except OSError:  # closed meanwhile
        return ""


def grows_monotonically(values: list[float]) -> bool:
    """True when a series never goes down and ends above where it started (a leak's shape)."""
    return len(values) > 1 and values[-1] > values[0] and all(b >= a for a, b in itertools.pairwise(values))


class DemoTraffic(Background):
    """The demo policy assistant answering ``rate`` questions per second on a thread (the agent
    exports wherever it was configured to); ``served`` counts the answers."""

    def __init__(self, rate: float, seed: int = 7) -> None:
        super().__init__("demo-traffic")
        self.rate = rate
        self.seed = seed
        self.served = 0
        self.errors: list[BaseException] = []
        self.t0 = 0.0

    def _run(self) -> None:
        from ragpulse.policy_rag import PolicyAssistant, TrafficModel, load_corpus

        corpus = load_corpus()
        assistant = PolicyAssistant(corpus, seed=self.seed)
        requests = TrafficModel(corpus, seed=self.seed + 4).requests(10**9)
        try:
            for req in requests:
                delay = self.t0 + self.served / self.rate - time.monotonic()
                if (delay > 0 and self._stop.wait(delay)) or self._stop.is_set():
                    return
                assistant.answer(req.question)
                self.served += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the owner
            self.errors.append(exc)

    def start(self) -> DemoTraffic:
        self.t0 = time.monotonic()
        return super().start()


class SoakRun:
    """Broker, collector and traffic for one soak; use as a context manager."""

    def __init__(self, workdir: Path, rate: float = 20.0, sampling: float = 0.1) -> None:
        self.workdir = workdir
        self.rate = rate
        self.sampling = sampling
        self.broker = KafkaBroker(workdir / "kafka", partitions=2)
        self.collector: CollectorProcess | None = None
        self.metrics_url = ""
        self.traffic = DemoTraffic(rate)
        self._stop = threading.Event()

    def __enter__(self) -> SoakRun:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _config(self) -> dict[str, Any]:
        suffix = uuid.uuid4().hex[:8]
        self.spans_topic, self.judge_topic = f"spans-{suffix}", f"judge-{suffix}"
        return {
            "kafka": {"bootstrap_servers": self.broker.bootstrap, "spans_topic": self.spans_topic,
                      "judge_topic": self.judge_topic, "deadletter_topic": f"dead-{suffix}",
                      "group_id": f"collector-{suffix}", "judge_group_id": f"judge-{suffix}"},
            "storage": {"dsn": f"chdb://{self.workdir / 'chdb'}"},
            "metrics": {"port": 0},
            "sampling": {"rate": self.sampling, "budget_per_minute": None},
            "judge": {"enabled": True, "judge": "local"},
        }  # fmt: skip

    def start(self) -> None:
        """Broker, topics, collector (ready), agent; traffic starts with :meth:`run`."""
        import ragpulse.agent as agent

        self.broker.workdir.mkdir(parents=True, exist_ok=True)
        self.broker.start()
        config = self._config()
        for topic in (self.spans_topic, self.judge_topic):
            self.broker.create_topic(topic, 2)
        path = self.workdir / "collector.yaml"
        path.write_text(yaml.safe_dump(config))
        self.collector = CollectorProcess(path, self.workdir / "collector.log", role="all")
        self.collector.start()
        self.metrics_url = self.collector.wait_ready(timeout=120)
        agent.configure(service_name=SERVICE, exporter="kafka", kafka_bootstrap_servers=self.broker.bootstrap,
                        kafka_topic=self.spans_topic, corpus_version="policies-2026.11")  # fmt: skip

    def sample(self) -> Sample:
        """One reading of every series (see :class:`Sample`)."""
        import ragpulse.agent as agent

        assert self.collector is not None and self.collector.proc is not None
        assert self.collector.alive(), self.collector.log_tail()
        pid = self.collector.proc.pid
        m = scrape(self.metrics_url)
        st = agent.stats()
        fds = [_target(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        return Sample(
            t=round(time.monotonic() - self.traffic.t0, 1),
            rss_bytes=_status_kb(pid, "VmRSS") << 10,
            fds=len(fds),
            fds_other=sum(1 for f in fds if not f.startswith(f"/proc/{pid}/task/")),
            threads=_status_kb(pid, "Threads"),
            assembly_buffer=int(m.get("ragpulse_assembly_buffer_traces", 0)),
            spans_lag=int(m.get(f"ragpulse_consumer_lag{{{self.spans_topic}}}", 0)),
            judge_lag=int(m.get(f"ragpulse_consumer_lag{{{self.judge_topic}}}", 0)),
            producer_in_flight=int(st["records_sent"]) - int(st["records_acked"]),  # type: ignore[call-overload]
            app_rss_bytes=_status_kb("self", "VmRSS") << 10,
            served=self.traffic.served,
            stored=int(m.get("ragpulse_traces_stored_total", 0)),
            judged=int(m.get("ragpulse_traces_judged_total", 0)),
        )

    def run(self, duration_s: float, interval_s: float = 10.0, on_sample: Any = None) -> list[Sample]:
        """Serve traffic for ``duration_s`` and sample every ``interval_s`` (first at 0)."""
        self.traffic.start()
        samples: list[Sample] = []
        k = 0
        while True:
            samples.append(self.sample())
            if on_sample is not None:
                on_sample(samples[-1])
            assert not self.traffic.errors, self.traffic.errors
            k += 1
            if k * interval_s > duration_s:
                break
            self._stop.wait(max(0.0, self.traffic.t0 + k * interval_s - time.monotonic()))
        self.traffic.stop()
        return samples

    def stop(self) -> None:
        """Stop traffic, the agent, the collector (SIGTERM) and the broker."""
        import ragpulse.agent as agent

        self._stop.set()
        self.traffic.stop()
        agent.shutdown()
        if self.collector is not None:
            if self.collector.alive():
                self.collector.terminate()
            self.collector.cleanup()
        self.broker.cleanup()
