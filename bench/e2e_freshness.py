"""Freshness end to end: from a root span's end to its trace row, its judgment, and /metrics.

The demo policy assistant serves questions at a fixed rate (bounded runs) with
the agent, either embedded (the collector in the application's process, agent
exporter ``embedded``) or through a real Kafka broker into a real ``ragpulse
collect`` process (ingest + local judge). For every trace:

* (a) trace row stored: ``rag_traces.ingested_at`` (set by ClickHouse at the
  insert) minus ``end_time`` (the root span's end);
* (b) judgment stored: ``rag_judgments.judged_at`` minus ``end_time``
  (``judged_at`` is taken when the judge finishes the trace, just before its
  batch is inserted: a lower bound of the stored time, by at most one batch);
* (c) judgment counted in ``/metrics``: a poller reads
  ``ragpulse_traces_judged_total`` every 0.1 s; the k-th trace judged (in
  ``judged_at`` order) is counted at the first poll that shows k or more.

It prints p50/p95/p99 of each, the quantiles of the collector's own
``ragpulse_pipeline_lag_seconds`` histogram (span end to judgment stored) and
whether they agree with (c) (the measured quantile within the histogram
bucket holding its quantile, widened by the poll interval), and CPU seconds
per process and per thread name (``/proc``) over the run.

Objectives (a benchmark, not a test): p95 to metric <= 5 s embedded and
<= 15 s with Kafka at 200 traces/s.

Usage: .venv/bin/python bench/e2e_freshness.py [--mode embedded|kafka|both]
       [--rates 50,200,500] [--sampling 0.1,1.0] [--seconds 20] [--out bench-results/freshness.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.background import Background  # noqa: E402
from tests.soak_run import DemoTraffic, SoakRun, scrape  # noqa: E402

POLL_S = 0.1
OBJECTIVE_S = {"embedded": 5.0, "kafka": 15.0}


class Poller(Background):
    """(wall time, ragpulse_traces_judged_total) every POLL_S seconds; the final histogram."""

    join_s = 10.0

    def __init__(self, url: str) -> None:
        super().__init__("freshness-poller")
        self.url = url
        self.points: list[tuple[float, float]] = []

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.points.append((time.time(), scrape(self.url).get("ragpulse_traces_judged_total", 0.0)))
            except OSError:
                pass


def cpu_by_thread(pid: int | str) -> dict[str, float]:
    """CPU seconds (user + system) per thread name of a process, from /proc/PID/task/*/stat."""
    out: dict[str, float] = defaultdict(float)
    # In this process Python's own thread names are known (the kernel's are all "python").
    own = {t.native_id: t.name for t in threading.enumerate()} if pid == "self" else {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        name = own.get(int(task.name)) or stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[name] += (int(fields[11]) + int(fields[12])) / 100.0  # clock ticks (USER_HZ = 100)
    # The whole process, threads that have exited included (the traffic thread, by the time it is read).
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    out["(process)"] = (int(fields[11]) + int(fields[12])) / 100.0
    return dict(out)


def _delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: round(v - before.get(k, 0.0), 2) for k, v in after.items() if v - before.get(k, 0.0) >= 0.05}


def quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None, "n": 0}
    v = sorted(values)
    pick = lambda q: round(v[min(len(v) - 1, int(q * len(v)))], 3)  # noqa: E731
    return {"p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99), "n": len(v)}


def histogram(metrics_text: str) -> list[tuple[float, float]]:
    """Cumulative (upper bound, count) of ragpulse_pipeline_lag_seconds over every service."""
    from prometheus_client.parser import text_string_to_metric_families

    buckets: dict[float, float] = defaultdict(float)
    for family in text_string_to_metric_families(metrics_text):
        for s in family.samples:
            if s.name == "ragpulse_pipeline_lag_seconds_bucket":
                buckets[float(s.labels["le"])] += s.value
    return sorted(buckets.items())


def hist_quantile(buckets: list[tuple[float, float]], q: float) -> tuple[float, float, float] | None:
    """(estimate by linear interpolation as PromQL does, bucket lower bound, upper bound)."""
    if not buckets or buckets[-1][1] == 0:
        return None
    rank = q * buckets[-1][1]
    lo_bound, lo_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return lo_bound, lo_bound, le
            est = lo_bound + (le - lo_bound) * (rank - lo_count) / max(count - lo_count, 1e-9)
            return est, lo_bound, le
        lo_bound, lo_count = le, count
    return None


def latencies(storage: Any, poll: list[tuple[float, float]], start_ns: int) -> dict[str, list[float]]:
    """Seconds from root span end to (a) stored, (b) judged, (c) counted, for traces ended after start_ns."""
    rows = storage.query(
        "SELECT toUnixTimestamp64Nano(end_time), toUnixTimestamp64Milli(ingested_at) FROM {db}.rag_traces FINAL "
        f"WHERE toUnixTimestamp64Nano(end_time) >= {start_ns}"
    )
    stored = [ms / 1e3 - end / 1e9 for end, ms in rows]
    judged = storage.query(
        "SELECT toUnixTimestamp64Nano(t.end_time), toUnixTimestamp64Milli(j.judged_at) FROM {db}.rag_judgments "
        "AS j FINAL INNER JOIN (SELECT trace_id, end_time FROM {db}.rag_traces FINAL) AS t USING trace_id "
        "ORDER BY j.judged_at"
    )
    before = storage.query(
        f"SELECT count() FROM {{db}}.rag_judgments FINAL WHERE toUnixTimestamp64Nano(time) < {start_ns}"
    )[0][0]
    counted, i = [], 0
    for k, (end, _ms) in enumerate(judged, start=1):
        while i < len(poll) and poll[i][1] < k:
            i += 1
        if i == len(poll):
            break
        if k > before:
            counted.append(poll[i][0] - end / 1e9)
    return {
        "stored": stored,
        "judged": [ms / 1e3 - end / 1e9 for end, ms in judged[before:]],
        "metric": counted,
    }


def run_embedded(rate: float, sampling: float, seconds: float, tmp: Path) -> dict[str, Any]:
    import ragpulse.agent as agent
    from ragpulse.collector.embedded.collector import EmbeddedCollector

    config = {
        "sampling": {"rate": sampling, "budget_per_minute": None},
        "feedback": {"reask": {"enabled": False}},
    }
    collector = EmbeddedCollector(tmp / "db", config=config, metrics_port=0).start()
    agent.configure(service_name="policy-assistant", exporter="embedded", corpus_version="policies-2026.11")
    poller = Poller(collector.metrics_url or "").start()
    cpu0, start_ns = cpu_by_thread("self"), time.time_ns()
    traffic = DemoTraffic(rate).start()
    time.sleep(seconds)  # a bounded run of this length, by design
    traffic.stop()
    agent.flush(60)
    collector.flush(timeout=300)
    time.sleep(3 * POLL_S)  # the poller's last reads
    poller.stop()
    cpu = {"bench+collector": _delta(cpu_by_thread("self"), cpu0)}
    text = urlopen_text(collector.metrics_url or "")
    lat = latencies(collector.storage, poller.points, start_ns)
    agent.shutdown()
    collector.stop()
    return {"served": traffic.served, "lat": lat, "hist": histogram(text), "cpu": cpu}


def urlopen_text(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        return resp.read().decode()


def run_kafka(rate: float, sampling: float, seconds: float, tmp: Path) -> dict[str, Any]:
    import ragpulse.agent as agent
    from ragpulse.collector.storage.clickhouse import Storage

    soak = SoakRun(tmp, rate=rate, sampling=sampling)
    try:
        soak.start()
        assert soak.collector is not None and soak.collector.proc is not None
        pids = {"collector": soak.collector.proc.pid, "broker": soak.broker.pid, "bench": "self"}
        poller = Poller(soak.metrics_url).start()
        cpu0 = {k: cpu_by_thread(p) for k, p in pids.items()}
        start_ns = time.time_ns()
        soak.traffic.start()
        time.sleep(seconds)  # a bounded run of this length, by design
        soak.traffic.stop()
        agent.flush(60)
        _drained(soak)
        time.sleep(3 * POLL_S)
        poller.stop()
        cpu = {k: _delta(cpu_by_thread(p), cpu0[k]) for k, p in pids.items()}
        text = urlopen_text(soak.metrics_url)
        served = soak.traffic.served
    finally:
        soak.stop()
    st = Storage(f"chdb://{tmp / 'chdb'}")
    try:
        lat = latencies(st, poller.points, start_ns)
    finally:
        st.close()
    return {"served": served, "lat": lat, "hist": histogram(text), "cpu": cpu}


def _drained(soak: SoakRun, timeout: float = 300.0) -> None:
    """Wait until both topics are consumed and the judged count stops moving for a second."""
    deadline, last, still = time.monotonic() + timeout, -1.0, 0
    while time.monotonic() < deadline:
        s = soak.sample()
        judged = float(s.judged)
        still = still + 1 if (s.spans_lag == s.judge_lag == s.assembly_buffer == 0 and judged == last) else 0
        if still >= 4:
            return
        last = judged
        time.sleep(0.25)
    raise RuntimeError("the collector did not drain")


def report(mode: str, rate: float, sampling: float, seconds: float, r: dict[str, Any]) -> dict[str, Any]:
    q = {k: quantiles(v) for k, v in r["lat"].items()}
    hist = {f"p{int(p * 100)}": hist_quantile(r["hist"], p) for p in (0.5, 0.95, 0.99)}
    agree = {}
    for name, h in hist.items():
        measured = q["metric"][name]
        agree[name] = (
            h is not None and measured is not None and h[1] - 2 * POLL_S <= measured <= h[2] + 2 * POLL_S
        )
    out = {"mode": mode, "rate": rate, "sampling": sampling, "seconds": seconds, "served": r["served"],
           "achieved_rate": round(r["served"] / seconds, 1), "quantiles": q,
           "pipeline_lag_histogram": {k: (None if v is None else [round(x, 3) for x in v]) for k, v in hist.items()},
           "histogram_agrees": agree, "cpu_seconds": r["cpu"]}  # fmt: skip
    p95 = q["metric"]["p95"]
    if rate == 200:
        out["objective_s"] = OBJECTIVE_S[mode]
        out["objective_met"] = p95 is not None and p95 <= OBJECTIVE_S[mode]
    return out


def _line(o: dict[str, Any]) -> str:
    q = o["quantiles"]
    fmt = lambda d: "/".join("-" if d[k] is None else f"{d[k]:.2f}" for k in ("p50", "p95", "p99"))  # noqa: E731
    h = o["pipeline_lag_histogram"]["p95"]
    objective = (
        f"  objective p95<={o['objective_s']:g}s: {'met' if o['objective_met'] else 'MISSED'}"
        if "objective_s" in o
        else ""
    )
    return (f"{o['mode']:8} {o['rate']:5g}/s (got {o['achieved_rate']:6.1f}) sampling {o['sampling']:4g}  "
            f"stored {fmt(q['stored'])}  judged {fmt(q['judged'])}  metric {fmt(q['metric'])} (n={q['metric']['n']})  "
            f"hist p95 {'-' if h is None else f'{h[0]:.2f} in [{h[1]:g},{h[2]:g}]'} agrees {o['histogram_agrees']['p95']}"
            f"{objective}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["embedded", "kafka", "both"], default="both")
    parser.add_argument("--rates", default="50,200,500")
    parser.add_argument("--sampling", default="0.1,1.0")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-results" / "freshness.json")
    args = parser.parse_args()
    modes = ["embedded", "kafka"] if args.mode == "both" else [args.mode]
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"freshness: {load}\n  (seconds from root span end; p50/p95/p99)", flush=True)
    results = []
    for mode in modes:
        for rate in [float(x) for x in args.rates.split(",")]:
            for sampling in [float(x) for x in args.sampling.split(",")]:
                with tempfile.TemporaryDirectory(prefix="ragpulse-fresh-") as tmp:
                    run = run_embedded if mode == "embedded" else run_kafka
                    o = report(
                        mode, rate, sampling, args.seconds, run(rate, sampling, args.seconds, Path(tmp))
                    )
                results.append(o)
                print(_line(o), flush=True)
                print("    cpu s: " + json.dumps(o["cpu_seconds"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"load": load, "results": results}, indent=1))
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
