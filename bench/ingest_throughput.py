"""Ingest throughput: spans per second from a real Kafka broker into chDB.

Starts a real single-node Kafka broker (tests/services.py), produces a backlog
of synthetic RAG traces (collector/demo/synthetic.py: root + retrieval with 5 chunks
of 300 characters + generation, a reranker on every third trace; about 3.3
spans and 6 KB per trace) into a 2-partition topic, then measures
``ragpulse collect --role ingest`` draining it:

1. one collector process (the whole backlog);
2. two collector processes in one consumer group (one partition each; each
   owns its own chDB path, since a chDB database has a single owner process);
3. the one-process run again in-process under pyinstrument, for the profile.

Each run is timed from the first spans received by any process (its
/metrics) until the group's committed offsets reach the end of the topic,
i.e. until every span is stored in ClickHouse and committed; CPU seconds are
counted per process from its own first spans received: what it spends before
(after /metrics is up: importing and opening chDB, applying the schema,
joining the consumer group; ~0.6 CPU-s) is start-up, printed apart.
Memory is judged by each process's peak private (anonymous) memory, sampled
from /proc (RssAnon) every 50 ms; peak RSS (VmHWM) is printed beside it, and
includes ~200 MB of chDB's file-backed library code, shared with the page
cache. Figures are printed side by side with the load average at the start of
each drain; the machine is shared, so compare ratios, not absolutes.

Usage: .venv/bin/python bench/ingest_throughput.py [--traces 20000] [--repeat 3] [--no-profile]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from ragpulse.collector.demo.synthetic import make_trace, traces_data  # noqa: E402

from tests.services import KafkaBroker  # noqa: E402
from tests.test_collector_kafka import CollectorProcess  # noqa: E402


def produce(
    broker: KafkaBroker, topic: str, n: int, chunks: int = 5, chunk_chars: int = 300, per_record: int = 1
) -> int:
    """``n`` synthetic traces as records of ``per_record`` traces each (1: one trace per record,
    keyed by its trace id, as the agent's exporter and kafkaexporter write them)."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=20, batch_size=1 << 20,
                      compression_type="lz4", max_request_size=4 << 20)  # fmt: skip
    spans = 0
    for lo in range(0, n, per_record):
        group = [
            make_trace(i, seed="bench", n_chunks=chunks, chunk_chars=chunk_chars, rerank=(i % 3 == 0),
                       rng=random.Random(i))
            for i in range(lo, min(n, lo + per_record))
        ]  # fmt: skip
        spans += sum(len(t.spans) for t in group)
        p.send(topic, key=group[0].hex.encode(), value=traces_data([(t.service, t.spans) for t in group]))
    p.flush(120)
    p.close()
    return spans


_ADMIN: dict[str, object] = {}


def committed(broker: KafkaBroker, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets. One admin client per broker, kept: the bench polls this
    every 50 ms on the machine it measures, and a new client per call costs real CPU."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    admin = _ADMIN.get(broker.bootstrap)
    if admin is None:
        admin = _ADMIN[broker.bootstrap] = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None}).get(group, {})  # type: ignore[attr-defined]
    except KafkaError:
        return {}
    return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic}


def close_admins() -> None:
    for admin in _ADMIN.values():
        admin.close()  # type: ignore[attr-defined]
    _ADMIN.clear()


def end_offsets(broker: KafkaBroker, topic: str) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic))]
        return {tp.partition: off for tp, off in c.end_offsets(parts).items()}
    finally:
        c.close()


THREAD_CPU: list[str] = []  # per-process "thread name seconds" lines, printed after the table
STARTUP_CPU: list[float] = []  # per process: CPU from /metrics up to its first spans (not counted)
SETTINGS: list[str] = []  # --set section.key=value overrides (YAML values), for exploring settings


def config(broker: KafkaBroker, topic: str, group: str, db: Path) -> dict:
    cfg = {
        "kafka": {"bootstrap_servers": broker.bootstrap, "spans_topic": topic, "group_id": group,
                  "judge_topic": topic + "-judge", "deadletter_topic": topic + "-dead", "session_timeout_ms": 6000},
        "storage": {"dsn": f"chdb://{db}"},
        "metrics": {"port": 0},
        "judge": {"enabled": False},
    }  # fmt: skip
    for item in SETTINGS:
        key, _, value = item.partition("=")
        section, _, name = key.partition(".")
        cfg.setdefault(section, {})[name] = yaml.safe_load(value)
    return cfg


def cpu_seconds(pid: int) -> float:
    """user + system CPU time of a process so far."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def minor_faults(pid: int) -> int:
    """Minor page faults of a process so far: each first touch of a fresh page (several
    microseconds apiece on the VMs this runs on, so freshly allocated memory costs CPU)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far per thread name (threads of one name summed; ids of pools stripped)."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")].rstrip("0123456789_-")
        if task.name == str(pid):
            name = "main"
        fields = text.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def spent_by_thread(pid: int, threads0: dict[str, float], faults0: int) -> str:
    """The CPU seconds each thread of ``pid`` (0.05 s and more) and the minor page faults spent since
    ``threads0`` and ``faults0`` were read."""
    spent = {name: sec - threads0.get(name, 0.0) for name, sec in thread_cpu(pid).items()}
    top = sorted(((sec, name) for name, sec in spent.items() if sec >= 0.05), reverse=True)
    faults = minor_faults(pid) - faults0
    return ", ".join(f"{name} {sec:.2f}" for sec, name in top) + f"; {faults} minor page faults"


def anon_rss_mb(pid: int) -> float:
    """Current anonymous (private, non-file) resident memory: RSS minus mapped library code."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _metric(url: str, name: str) -> float:
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/metrics", timeout=2) as resp:
            for line in resp.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
    except OSError:
        pass
    return 0.0


def _url(proc: CollectorProcess) -> str | None:
    import re

    found = re.findall(r"metrics on (http://\S+)", proc.log_path.read_text(errors="replace"))
    return found[-1] if found else None


def load_average() -> float:
    with open("/proc/loadavg") as fh:
        return float(fh.read().split()[0])


def run_processes(
    broker: KafkaBroker, topic: str, n_procs: int, workdir: Path, python: str = ""
) -> tuple[float, list[float], list[float], list[float], float]:
    """Drain the backlog with ``n_procs`` processes in one new group.

    The clock starts when the first process has received its first spans (its
    /metrics shows ragpulse_spans_received_total > 0) and stops when the
    group's commits reach the end of the topic. CPU is counted per process
    from its own first spans (start-up excluded: from /metrics up to then, it
    goes to STARTUP_CPU).
    """
    group = f"bench-{uuid.uuid4().hex[:6]}"
    procs = []
    for k in range(n_procs):
        d = workdir / f"{group}-{k}"
        d.mkdir(parents=True)
        path = d / "collector.yaml"
        path.write_text(yaml.safe_dump(config(broker, topic, group, d / "chdb")))
        procs.append(CollectorProcess(path, d / "collector.log", python=python))
    end = end_offsets(broker, topic)
    load = load_average()
    try:
        for p in procs:
            p.start()
        urls: list[str | None] = [None] * n_procs
        cpu0: list[float | None] = [None] * n_procs
        broker0: float | None = None
        threads0: list[dict[str, float]] = [{} for _ in procs]
        faults0 = [0] * n_procs
        start = None
        anon = [0.0] * n_procs
        served: list[float | None] = [None] * n_procs  # CPU when /metrics came up
        while True:
            for k, p in enumerate(procs):
                assert p.alive(), p.log_tail()
                if urls[k] is None:
                    urls[k] = _url(p)
                    if urls[k] is not None:
                        served[k] = cpu_seconds(p.proc.pid)  # type: ignore[union-attr]
                if (
                    urls[k] is not None
                    and cpu0[k] is None
                    and _metric(urls[k], "ragpulse_spans_received_total") > 0
                ):
                    cpu0[k] = cpu_seconds(p.proc.pid)  # type: ignore[union-attr]
                    threads0[k] = thread_cpu(p.proc.pid)  # type: ignore[union-attr]
                    faults0[k] = minor_faults(p.proc.pid)  # type: ignore[union-attr]
                    if start is None:
                        start = time.monotonic()
                        broker0 = cpu_seconds(broker.pid) if broker.pid else None
            for k, p in enumerate(procs):
                anon[k] = max(anon[k], anon_rss_mb(p.proc.pid))  # type: ignore[union-attr]
            if start is not None and committed(broker, group, topic) == end:
                break
            time.sleep(0.05)
        for k in range(n_procs):  # a process that got no spans (no partition): counted from /metrics
            if cpu0[k] is None:
                cpu0[k] = served[k]
        STARTUP_CPU.extend((c or 0.0) - (s0 or 0.0) for c, s0 in zip(cpu0, served, strict=True))
        elapsed = time.monotonic() - start
        if broker0 is not None and broker.pid:
            THREAD_CPU.append(
                f"{n_procs} process(es){' (other)' if python else ''}, Kafka broker: {cpu_seconds(broker.pid) - broker0:.2f}"
            )
        rss = [peak_rss_mb(p.proc.pid) for p in procs if p.proc]
        cpu = [cpu_seconds(p.proc.pid) - (c0 or 0.0) for p, c0 in zip(procs, cpu0, strict=True) if p.proc]
        for k, p in enumerate(procs):
            THREAD_CPU.append(
                f"{n_procs} process(es){' (other)' if python else ''}, #{k + 1}: "
                + spent_by_thread(p.proc.pid, threads0[k], faults0[k])  # type: ignore[union-attr]
            )
        for p in procs:
            rc, _ = p.terminate()
            assert rc == 0, p.log_tail()
        return elapsed, rss, cpu, anon, load
    finally:
        for p in procs:
            p.cleanup()


def profile_in_process(broker: KafkaBroker, topic: str, workdir: Path) -> str:
    from pyinstrument import Profiler
    from ragpulse.collector.config import load_config
    from ragpulse.collector.kafka.collector import KafkaCollector

    group = f"bench-prof-{uuid.uuid4().hex[:6]}"
    cfg = load_config(None, overrides=config(broker, topic, group, workdir / "prof-chdb"))
    collector = KafkaCollector(cfg, serve_metrics=False)
    end = end_offsets(broker, topic)

    def watch() -> None:
        while committed(broker, group, topic) != end:
            time.sleep(0.2)
        collector.request_stop()

    threading.Thread(target=watch, daemon=True).start()
    profiler = Profiler(interval=0.002)
    profiler.start()
    collector.run()
    profiler.stop()
    return profiler.output_text(unicode=False, color=False, show_all=False, short_mode=False)


def print_against(python: str, spans: int, runs: list[tuple], other: list[tuple]) -> None:
    """One-process drains of this checkout and of ``python``'s, alternated on the same backlog."""
    print(f"one-process drains, alternating with {python}:")
    print(f"  {'run':<6}{'this spans/s':>14}{'spans/CPU-s':>13}{'anon MB':>9}"
          f"{'other spans/s':>15}{'spans/CPU-s':>13}{'anon MB':>9}{'load':>7}")  # fmt: skip
    for k, (a, b) in enumerate(zip(runs, other, strict=True), 1):
        print(f"  {k:<6}{spans / a[0]:>14.0f}{spans / sum(a[2]):>13.0f}{max(a[3]):>9.0f}"
              f"{spans / b[0]:>15.0f}{spans / sum(b[2]):>13.0f}{max(b[3]):>9.0f}{a[4]:>7.2f}")  # fmt: skip
    cpu_a = sum(sum(r[2]) for r in runs)
    cpu_b = sum(sum(r[2]) for r in other)
    print(f"  CPU per span, all drains: this {cpu_a * 1e6 / (spans * len(runs)):.1f} us, "
          f"other {cpu_b * 1e6 / (spans * len(other)):.1f} us (this/other {cpu_a / cpu_b:.2f}x)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=20_000)
    ap.add_argument("--chunks", type=int, default=5, help="retrieved chunks per trace")
    ap.add_argument("--chunk-chars", type=int, default=300, help="characters per chunk")
    ap.add_argument("--per-record", type=int, default=1,
                    help="traces per Kafka record (default 1, the agent's and kafkaexporter's shape)")  # fmt: skip
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--repeat", type=int, default=3,
                    help="one-process drains to run; the fastest counts (the machine is shared and noisy); "
                    "the memory figure is the highest of all of them")  # fmt: skip
    ap.add_argument("--against", default="", metavar="PYTHON",
                    help="another checkout's interpreter (e.g. an older commit's .venv/bin/python): its "
                    "collector drains the same backlog, alternating with this one's, and both are printed")  # fmt: skip
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="collector setting for every run, e.g. --set storage.batch_max_traces=1000")  # fmt: skip
    args = ap.parse_args()
    SETTINGS.extend(args.set)
    if args.set:
        print("settings:", ", ".join(args.set))
    workdir = Path(tempfile.mkdtemp(prefix="ragpulse-bench-"))
    (workdir / "kafka").mkdir()
    broker = KafkaBroker(workdir=workdir / "kafka", partitions=2, heap="1g").start()
    try:
        topic = "bench-spans"
        broker.create_topic(topic, 2)
        t0 = time.monotonic()
        spans = produce(broker, topic, args.traces, args.chunks, args.chunk_chars, args.per_record)
        print(
            f"backlog: {args.traces} traces ({args.chunks} chunks x {args.chunk_chars} chars, {args.per_record} per record), {spans} spans in 2 partitions (produced in {time.monotonic() - t0:.1f}s)"
        )
        runs, other = [], []
        for _ in range(max(1, args.repeat)):
            runs.append(run_processes(broker, topic, 1, workdir))
            if args.against:
                other.append(run_processes(broker, topic, 1, workdir, args.against))
        if args.against:
            print_against(args.against, spans, runs, other)
        print(
            "one-process runs (spans/s, peak anon MB, load average at start):",
            "; ".join(f"{spans / r[0]:.0f}, {max(r[3]):.0f} MB, load {r[4]:.2f}" for r in runs),
        )
        one, rss1, cpu1, anon1, _ = min(runs, key=lambda r: r[0])
        rss1 = [max(max(r[1]) for r in runs)]  # the memory target holds for every run
        anon1 = [max(max(r[3]) for r in runs)]
        two, rss2, cpu2, anon2, _ = run_processes(broker, topic, 2, workdir)
        print(
            f"{'setup':<34}{'seconds':>9}{'spans/s':>11}{'spans/CPU-s':>13}{'peak RSS MB':>14}{'peak anon MB':>15}"
        )
        print(
            f"{'1 collector process':<34}{one:>9.2f}{spans / one:>11.0f}{spans / sum(cpu1):>13.0f}"
            f"{max(rss1):>14.0f}{max(anon1):>15.0f}"
        )
        print(
            f"{'2 processes, one group, 2 parts':<34}{two:>9.2f}{spans / two:>11.0f}{spans / sum(cpu2):>13.0f}"
            f"{'/'.join(f'{r:.0f}' for r in rss2):>14}{'/'.join(f'{r:.0f}' for r in anon2):>15}"
        )
        print("CPU seconds by thread (from its first spans to fully committed):")
        for line in THREAD_CPU:
            print("  " + line)
        print(f"start-up, from /metrics up to the first spans (not counted above): "
              f"{min(STARTUP_CPU):.2f}-{max(STARTUP_CPU):.2f} CPU-s a process")  # fmt: skip
        print("(peak RSS includes ~200 MB of chDB's memory-mapped library code; anon = private memory)")
        print(f"machine: {os.cpu_count()} CPUs, load average {load_average():.2f} (shared; compare ratios)")
        print(f"ratio 2 processes / 1 process: {one / two:.2f}x")
        met = spans / one >= 25_000 and spans / sum(cpu1) >= 25_000 and max(anon1) < 250
        print(f"target: >= 25,000 spans/s (best drain), >= 25,000 spans/CPU-s (that drain) and < 250 MB "
              f"peak anon (every drain) for one process -> {'met' if met else 'NOT met'}")  # fmt: skip
        if not args.no_profile:
            text = profile_in_process(broker, topic, workdir)
            print("\nprofile of one in-process run (pyinstrument, top of the tree):")
            print("\n".join(text.splitlines()[:60]))
    finally:
        close_admins()
        broker.cleanup()


if __name__ == "__main__":
    main()
