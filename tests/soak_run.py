"""Steady demo-app load through a real Kafka broker into a real ``ragpulse collect``, sampled.

:class:`SoakRun` owns a broker (:class:`tests.services.KafkaBroker`), the
topics, group and chDB path of a :class:`tests.test_collector_kafka.Setup`
(its configuration set back to the product's defaults), one ``ragpulse
collect`` process at a time (ingest and the local judge) and a traffic thread
serving the demo policy assistant at a fixed rate with the agent's Kafka
exporter, recording the trace id of every answer. :meth:`SoakRun.sample` reads
what can grow without bound: the collector's resident memory (anonymous and
file-backed apart), open file descriptors and threads (``/proc``), its assembly
buffer and the consumer lag of both topics (its ``/metrics``), and the agent's
records sent but not yet acknowledged.
:meth:`SoakRun.restart_collector` SIGKILLs the collector and starts another on
the same database and groups (tests/soak_faults.py's faults use it), and
:meth:`SoakRun.drain` waits until both topics are consumed, so the stored rows
can be audited (tests/soak_audit.py). ``bench/soak.py`` runs it for 30 minutes
with faults; ``tests/test_soak.py`` runs short versions.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import urllib.request
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from tests.background import Background
from tests.services import KafkaBroker
from tests.test_collector_kafka import CollectorProcess, Setup

__all__ = ["DemoTraffic", "Sample", "SoakRun", "grows_monotonically", "scrape"]

SERVICE = "policy-assistant"
# A sample waits this long for /metrics: a collector starved of CPU (the soak shares a small machine)
# answers late, which the sample records (Sample.scrape_s) instead of failing the run.
SCRAPE_TIMEOUT_S = 60.0
# The collector's counters a sample sums over its processes: metric -> Sample field
COUNTERS = {"ragpulse_traces_stored_total": "stored", "ragpulse_traces_judged_total": "judged",
            "ragpulse_late_spans_total": "late_spans", "ragpulse_traces_dropped_total": "traces_dropped"}  # fmt: skip


@dataclass
class Sample:
    """One reading, ``t`` seconds after traffic started."""

    t: float
    scrape_s: float  # how long the collector's /metrics took to answer
    pid: int  # the collector process (a new one after a SIGKILL fault)
    rss_bytes: int  # collector VmRSS
    rss_anon_bytes: int  # of which anonymous (heaps, thread stacks: what a leak grows)
    rss_file_bytes: int  # of which file-backed (the mapped libraries' pages read so far)
    fds: int  # collector open file descriptors
    fds_other: int  # those that are not a thread's own /proc/PID/task/TID file (chDB keeps three per thread)
    threads: int  # collector threads
    assembly_buffer: int  # partial traces buffered (ragpulse_assembly_buffer_traces)
    spans_lag: int  # records behind the end of the spans topic (ragpulse_consumer_lag, the collector's view)
    spans_uncommitted: (
        int  # the ingest group's records not committed yet, read from the broker (-1: unreachable)
    )
    judge_lag: int  # the judge group's records not committed yet, read from the broker (-1: unreachable)
    judge_consumer_lag: int  # ragpulse_consumer_lag of the judge topic (the judge workers' view)
    producer_in_flight: int  # agent records sent, not yet acknowledged
    app_rss_bytes: int  # the application's (this process's) VmRSS
    served: int  # requests the application served
    stored: int  # ragpulse_traces_stored_total, summed over the collector processes so far
    judged: int  # ragpulse_traces_judged_total, likewise
    late_spans: int  # ragpulse_late_spans_total, likewise (spans that came after their trace was stored)
    traces_dropped: int  # ragpulse_traces_dropped_total, likewise

    @classmethod
    def header(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def row(self) -> list[Any]:
        return [getattr(self, f.name) for f in fields(self)]


def scrape(url: str, timeout: float = 5.0) -> dict[str, float]:
    """``/metrics`` summed by metric name and, for the consumer lag, by topic (``name{topic}``)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=timeout) as resp:
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
    exports wherever it was configured to). ``served`` counts the answers and ``trace_ids`` holds
    each answer's trace id (16 bytes apiece, recorded inside the traced call). Behind its schedule
    (a loaded machine) it answers back to back: :meth:`achieved_rate` says what it reached."""

    def __init__(self, rate: float, seed: int = 7) -> None:
        super().__init__("demo-traffic")
        self.rate = rate
        self.seed = seed
        self.served = 0
        self.trace_ids = bytearray()
        self.errors: list[BaseException] = []
        self.t0 = 0.0
        self.t_end = 0.0

    def _run(self) -> None:
        from ragpulse.agent import current_trace_id
        from ragpulse.policy_rag import PolicyAssistant, TrafficModel, load_corpus

        def record(*_: object) -> None:
            self.trace_ids += bytes.fromhex(current_trace_id() or "")

        corpus = load_corpus()
        assistant = PolicyAssistant(corpus, seed=self.seed, on_answer=record)
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
        finally:
            self.t_end = time.monotonic()

    def start(self) -> DemoTraffic:
        self.t0 = time.monotonic()
        return super().start()

    def served_ids(self) -> list[str]:
        """The trace id (hex) of every answer served, in order."""
        ids = bytes(self.trace_ids)
        return [ids[i : i + 16].hex() for i in range(0, len(ids), 16)]

    def achieved_rate(self) -> float:
        """Answers per second from start to stop (or to now while running)."""
        end = self.t_end or time.monotonic()
        return self.served / max(1e-9, end - self.t0)


def _soak_settings(db: Path, chdb_config: Path | None, assembly_timeout_s: float | None) -> dict[str, Any]:
    """What :class:`Setup` tunes for quick tests set back to the product's defaults, plus the soak's
    own: its chDB path (with ``chdb_config`` as ``config-file``), the local judge and, when given,
    ``assembly.timeout_s``."""
    from ragpulse.collector.config import default_config

    d = default_config()
    dsn = f"chdb://{db}" + (f"?config-file={chdb_config}" if chdb_config else "")
    return {
        "kafka": {k: d["kafka"][k] for k in ("session_timeout_ms", "max_poll_records")},
        "storage": {"dsn": dsn, **{k: d["storage"][k] for k in ("batch_max_seconds", "retry_initial_s", "retry_max_s")}},
        "assembly": {"timeout_s": assembly_timeout_s or d["assembly"]["timeout_s"]},
        "feedback": {"reask": d["feedback"]["reask"]},
        "judge": {"enabled": True, "judge": "local"},
    }  # fmt: skip


class SoakRun:
    """Broker, collector and traffic for one soak; use as a context manager.

    ``chdb_config``: a chDB ``config-file`` for the collector's database (the storage-outage
    fault's free-space floor); ``kafka_options``: the agent's producer settings;
    ``assembly_timeout_s``: the collector's (None: the product's default)."""

    def __init__(
        self,
        workdir: Path,
        rate: float = 20.0,
        sampling: float = 0.1,
        chdb_config: Path | None = None,
        kafka_options: dict[str, Any] | None = None,
        assembly_timeout_s: float | None = None,
    ) -> None:
        self.workdir = workdir
        self.rate = rate
        self.sampling = sampling
        self.chdb_config = chdb_config
        self.kafka_options = dict(kafka_options or {})
        self.assembly_timeout_s = assembly_timeout_s
        self.broker = KafkaBroker(workdir / "kafka", partitions=2)
        self.setup: Setup | None = None
        self.collector: CollectorProcess | None = None
        self.metrics_url = ""
        self.traffic = DemoTraffic(rate)
        self.lock = threading.RLock()  # held while the collector is replaced: samples wait
        self._earlier = dict.fromkeys(COUNTERS.values(), 0)  # counters of the collector processes killed
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

    @property
    def db(self) -> Path:
        """The collector's chDB path."""
        return self.workdir / "chdb"

    def start(self) -> None:
        """Broker, topics, collector (ready), agent; traffic starts with :meth:`run`."""
        import ragpulse.agent as agent

        self.broker.workdir.mkdir(parents=True, exist_ok=True)
        self.broker.start()
        sampling = {"rate": self.sampling, "budget_per_minute": None}
        self.setup = Setup(
            self.broker,
            self.workdir,
            sampling=sampling,
            **_soak_settings(self.db, self.chdb_config, self.assembly_timeout_s),
        )
        self.spans_topic, self.judge_topic = self.setup.spans, self.setup.judge
        self.collector = self.setup.collector(role="all")
        self.metrics_url = self.collector.wait_ready(timeout=120)
        agent.configure(service_name=SERVICE, exporter="kafka", kafka_bootstrap_servers=self.broker.bootstrap,
                        kafka_topic=self.spans_topic, corpus_version="policies-2026.11",
                        kafka_options=self.kafka_options)  # fmt: skip

    def restart_collector(self) -> tuple[float, float]:
        """SIGKILL the collector's process group and start another on the same configuration
        (database, topics, groups); returns the monotonic times of the kill and of the new
        process's readiness. Samples wait meanwhile."""
        assert self.setup is not None and self.collector is not None
        with self.lock:
            try:  # its counters up to the kill (what it does in the few ms after is not counted)
                m = scrape(self.metrics_url)
                for metric, name in COUNTERS.items():
                    self._earlier[name] += int(m.get(metric, 0))
            except OSError:
                pass
            killed = time.monotonic()
            self.collector.kill()
            self.collector = self.setup.collector(role="all")
            self.metrics_url = self.collector.wait_ready(timeout=240)
            return killed, time.monotonic()

    def sample(self) -> Sample:
        """One reading of every series (see :class:`Sample`)."""
        import ragpulse.agent as agent

        with self.lock:
            assert self.collector is not None and self.collector.proc is not None
            assert self.collector.alive(), self.collector.log_tail()
            pid = self.collector.proc.pid
            begin = time.monotonic()
            m = scrape(self.metrics_url, timeout=SCRAPE_TIMEOUT_S)
            took = time.monotonic() - begin
            st = agent.stats()
            fds = [_target(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            return Sample(
                t=round(time.monotonic() - self.traffic.t0, 1),
                scrape_s=round(took, 3),
                pid=pid,
                rss_bytes=_status_kb(pid, "VmRSS") << 10,
                rss_anon_bytes=_status_kb(pid, "RssAnon") << 10,
                rss_file_bytes=_status_kb(pid, "RssFile") << 10,
                fds=len(fds),
                fds_other=sum(1 for f in fds if not f.startswith(f"/proc/{pid}/task/")),
                threads=_status_kb(pid, "Threads"),
                assembly_buffer=int(m.get("ragpulse_assembly_buffer_traces", 0)),
                spans_lag=int(m.get(f"ragpulse_consumer_lag{{{self.spans_topic}}}", 0)),
                spans_uncommitted=self.uncommitted(self.spans_topic),
                judge_lag=self.uncommitted(self.judge_topic),
                judge_consumer_lag=int(m.get(f"ragpulse_consumer_lag{{{self.judge_topic}}}", 0)),
                producer_in_flight=int(st["records_sent"]) - int(st["records_acked"]),  # type: ignore[call-overload]
                app_rss_bytes=_status_kb("self", "VmRSS") << 10,
                served=self.traffic.served,
                **{name: self._earlier[name] + int(m.get(metric, 0)) for metric, name in COUNTERS.items()},
            )

    def uncommitted(self, topic: str) -> int:
        """Records of ``topic`` its consuming group (ingest or judge) has not committed, from the
        broker: it counts partitions no member holds (after a SIGKILL, until the group rebalances),
        which a consumer's own lag cannot. -1 while the broker cannot be reached."""
        assert self.setup is not None
        kafka = self.setup.config["kafka"]
        group = kafka["group_id"] if topic == self.spans_topic else kafka["judge_group_id"]
        try:
            committed = self.setup.committed(group, topic)
            return sum(end - committed.get(p, 0) for p, end in self.setup.end_offsets(topic).items())
        except Exception:  # noqa: BLE001 - the broker restarting
            return -1

    def run(
        self,
        duration_s: float,
        interval_s: float = 10.0,
        on_sample: Any = None,
        faults: Any = None,
    ) -> list[Sample]:
        """Serve traffic for ``duration_s`` and sample every ``interval_s`` (first at 0). ``faults``
        (tests/soak_faults.py's schedule: ``start()``, ``done()``, ``stop()``) starts with the
        traffic; the traffic goes on past ``duration_s`` until it is done."""
        self.traffic.start()
        if faults is not None:
            faults.start()
        samples: list[Sample] = []
        k = 0
        try:
            while True:
                samples.append(self.sample())
                if on_sample is not None:
                    on_sample(samples[-1])
                assert not self.traffic.errors, self.traffic.errors
                k += 1
                if k * interval_s > duration_s and (faults is None or faults.done()):
                    break
                self._stop.wait(max(0.0, self.traffic.t0 + k * interval_s - time.monotonic()))
        finally:
            self.traffic.stop()
            if faults is not None:
                faults.stop()
        return samples

    def drain(self, timeout: float = 900.0) -> float:
        """After the traffic stopped: wait until the agent's records are acknowledged and the
        collector committed both topics to their ends (every served trace stored and judged, or
        dead-lettered); returns the seconds it took."""
        import ragpulse.agent as agent

        assert self.setup is not None and self.collector is not None
        start = time.monotonic()
        agent.flush(timeout_s=120)
        self.setup.wait_caught_up(self.collector, timeout=timeout, judges=True)
        return time.monotonic() - start

    def stop_collector(self) -> int:
        """SIGTERM the collector (so the database can be opened here); returns its exit status."""
        assert self.collector is not None
        rc, _took = self.collector.terminate()
        return rc

    def stop(self) -> None:
        """Stop traffic, the agent, the collector (SIGTERM) and the broker."""
        import ragpulse.agent as agent

        self._stop.set()
        self.traffic.stop()
        agent.shutdown()
        if self.collector is not None and self.collector.alive():
            self.collector.terminate()
        if self.setup is not None:
            self.setup.cleanup()
        self.broker.cleanup()
