"""Soak: 30 minutes of demo-app load through a real Kafka broker, with faults, audited and plotted.

Runs :class:`tests.soak_run.SoakRun` (a real broker, one ``ragpulse collect`` with ingest
and the local judge, the demo policy assistant exporting to Kafka at a fixed rate and
recording every trace id it served) and every ``--interval`` seconds records the
collector's RSS, open file descriptors and threads, its assembly buffer, the consumer lag
of the spans and judge topics, and the agent's unacknowledged records. Meanwhile
tests/soak_faults.py's schedule SIGKILLs the collector (a new one starts on the same
database and groups), restarts the broker, and takes the storage's disk space away for
``--storage-outage-s`` (``--faults``: by default at 1/6, 2/6 and 3/6 of the run). After
the traffic stops and the pipeline drains, tests/soak_audit.py reads the database.

Objectives: every served trace is stored exactly once (rag_traces FINAL) and, sampled,
judged exactly once (rag_judgments FINAL), with no span dropped by the agent; every fault
recovers; the final collector's RSS over the last 20 minutes grows by less than 5% (median
of the last three samples against the first three) and not monotonically; outside the
faults the consumer lag stays under ``--max-lag`` records and does not grow monotonically.
Writes the samples to a CSV and plots them to a PNG (matplotlib, the ``bench`` extra).

Usage: .venv/bin/python bench/soak.py [--minutes 30] [--rate 200] [--sampling 1]
       [--faults auto|none|collector@5,broker@10,storage@15] [--interval 10] [--out bench-results/soak]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.soak_audit import audit  # noqa: E402
from tests.soak_faults import DiskFloor, FaultRecord, FaultSchedule, parse_plan  # noqa: E402
from tests.soak_run import Sample, SoakRun, grows_monotonically  # noqa: E402

WINDOW_S = 20 * 60
EDGE_S = 5 * 60  # the RSS report's first and last minutes
DRAIN_TIMEOUT_S = 3600.0  # the local judge may be far behind a 200/s run on a small machine


def plot(samples: list[Sample], faults: list[FaultRecord], path: Path, title: str) -> None:
    """Four panels: memory, descriptors/threads, buffers, consumer lag; faults shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s.t / 60 for s in samples]
    fig, axes = plt.subplots(4, 1, figsize=(9, 11), sharex=True)
    axes[0].plot(t, [s.rss_bytes / 2**20 for s in samples], label="collector RSS")
    axes[0].plot(t, [s.app_rss_bytes / 2**20 for s in samples], label="application RSS")
    axes[0].set_ylabel("MiB")
    axes[1].plot(t, [s.fds for s in samples], label="collector open fds")
    axes[1].plot(t, [s.fds_other for s in samples], label="fds other than per-thread /proc files")
    axes[1].plot(t, [s.threads for s in samples], label="collector threads")
    axes[2].plot(t, [s.assembly_buffer for s in samples], label="assembly buffer (traces)")
    axes[2].plot(t, [s.producer_in_flight for s in samples], label="agent records unacknowledged")
    axes[3].plot(t, [s.spans_lag for s in samples], label="spans topic lag (records)")
    axes[3].plot(t, [max(0, s.spans_uncommitted) for s in samples], label="spans not committed (broker)")
    axes[3].plot(t, [max(0, s.judge_lag) for s in samples], label="judge topic not committed (broker)")
    axes[3].set_xlabel("minutes")
    for ax in axes:
        for f in faults:
            end = f.recovered_s if f.recovered_s is not None else samples[-1].t
            ax.axvspan(f.start_s / 60, end / 60, color="tab:red", alpha=0.12)
        ax.legend(loc="upper left", fontsize=8)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    for f in faults:
        axes[0].annotate(f.name, (f.start_s / 60, 0), fontsize=8, rotation=90, va="bottom")
    axes[0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _mib(samples: list[Sample]) -> float:
    return statistics.median(s.rss_bytes for s in samples) / 2**20


def rss_report(samples: list[Sample]) -> tuple[list[str], bool]:
    """RSS first vs last EDGE_S of the run and of each collector process; the objective on the
    last WINDOW_S of the last process."""
    end = samples[-1].t
    first, last = [s for s in samples if s.t < EDGE_S], [s for s in samples if s.t >= end - EDGE_S]
    lines = [f"collector RSS, run's first 5 min {_mib(first):.1f} MiB vs last 5 min {_mib(last):.1f} MiB "
             f"(median; pids {sorted({s.pid for s in first})} vs {sorted({s.pid for s in last})})"]  # fmt: skip
    for pid in dict.fromkeys(s.pid for s in samples):
        own = [s for s in samples if s.pid == pid]
        a, b = [s for s in own if s.t < own[0].t + EDGE_S], [s for s in own if s.t >= own[-1].t - EDGE_S]
        lines.append(
            f"  pid {pid}: {own[0].t / 60:.1f}-{own[-1].t / 60:.1f} min, first 5 min {_mib(a):.1f} MiB, last 5 min "
            f"{_mib(b):.1f} MiB ({(_mib(b) / _mib(a) - 1) * 100:+.1f}%), peak {max(s.rss_bytes for s in own) / 2**20:.1f} MiB"
        )
    own = [s for s in samples if s.pid == samples[-1].pid]
    window = [s for s in own if s.t >= end - WINDOW_S] if end - own[0].t > WINDOW_S else own[len(own) // 3 :]
    a, b = (
        statistics.median(s.rss_bytes for s in window[:3]),
        statistics.median(s.rss_bytes for s in window[-3:]),
    )
    growth = (b - a) / a
    rising = grows_monotonically([float(s.rss_bytes) for s in window])
    lines.append(
        f"last process over its last {(window[-1].t - window[0].t) / 60:.1f} min: {a / 2**20:.1f} -> {b / 2**20:.1f} MiB "
        f"({growth * 100:+.2f}%; objective < 5%, monotonic: {rising})"
    )
    return lines, growth < 0.05 and not rising


def steady_report(samples: list[Sample], faults: list[FaultRecord], max_lag: int) -> tuple[list[str], bool]:
    """Consumer lag, descriptors, threads and buffers outside the faults (start to recovery)."""

    def in_fault(t: float) -> bool:
        return any(f.start_s <= t <= (f.recovered_s if f.recovered_s is not None else 1e18) for f in faults)

    steady = [s for s in samples if not in_fault(s.t)] or samples
    lag = [s.spans_lag for s in steady]
    judge = [s.judge_lag for s in samples if s.judge_lag >= 0]
    own = [s for s in steady if s.pid == samples[-1].pid]
    lines = [
        f"outside the faults ({len(steady)} samples): spans topic consumer lag max {max(lag)}, last {lag[-1]} "
        f"records (bound {max_lag}); with the faults max {max(s.spans_lag for s in samples)}",
        f"judge group's uncommitted records: max {max(judge)}, at the end of the traffic {judge[-1]} "
        f"(judging {(samples[-1].judged - samples[0].judged) / max(1.0, samples[-1].t - samples[0].t):.1f}/s "
        "over the run)",
        f"last process: open fds {min(s.fds for s in own)}-{max(s.fds for s in own)} (other than per-thread /proc "
        f"files: {min(s.fds_other for s in own)}-{max(s.fds_other for s in own)}), threads "
        f"{min(s.threads for s in own)}-{max(s.threads for s in own)}, assembly buffer max "
        f"{max(s.assembly_buffer for s in own)}, agent unacknowledged max {max(s.producer_in_flight for s in own)}",
        f"/metrics answered in {statistics.median(s.scrape_s for s in samples):.2f}s (median), "
        f"{max(s.scrape_s for s in samples):.2f}s at most",
    ]
    return lines, max(lag) <= max_lag and not grows_monotonically([float(x) for x in lag])


def soak(args: argparse.Namespace, tmp: Path, record: Any) -> dict[str, Any]:
    """Run, drain, stop the collector, audit; returns what the report needs."""
    import ragpulse.agent as agent

    plan = parse_plan(args.faults, args.minutes * 60)
    floor = DiskFloor(tmp / "floor") if any(name == "storage" for _, name in plan) else None
    options = {"delivery_timeout_ms": args.delivery_timeout_ms}
    with SoakRun(tmp, rate=args.rate, sampling=args.sampling, chdb_config=floor and floor.config,
                 kafka_options=options, assembly_timeout_s=args.assembly_timeout_s) as run:  # fmt: skip
        schedule = (
            FaultSchedule(run, plan, floor, args.storage_outage_s, args.broker_down_s) if plan else None
        )
        samples = run.run(args.minutes * 60, args.interval, on_sample=record, faults=schedule)
        achieved = run.traffic.achieved_rate()
        (tmp / "served-trace-ids.bin").write_bytes(
            bytes(run.traffic.trace_ids)
        )  # 16 bytes each, for a re-audit
        drain_s = run.drain(timeout=DRAIN_TIMEOUT_S)
        final, stats = run.sample(), agent.stats()
        rc = run.stop_collector()
        result = audit(run.db, run.traffic.served_ids(), args.sampling)
    return {"samples": samples, "faults": schedule.records if schedule else [], "achieved": achieved,
            "drain_s": drain_s, "final": final, "stats": stats, "rc": rc, "audit": result,
            "fault_errors": schedule.errors if schedule else [], "planned": plan}  # fmt: skip


def report(args: argparse.Namespace, r: dict[str, Any]) -> bool:
    """Print the figures; True when every objective holds."""
    a, final, stats = r["audit"], r["final"], r["stats"]
    print(f"traffic: {a.served} answers in {r['samples'][-1].t / 60:.1f} min, {r['achieved']:.1f}/s "
          f"(target {args.rate:g}/s); agent spans exported {stats['spans_exported']}, dropped {stats['spans_dropped']} "
          f"{stats['dropped']}; drained in {r['drain_s']:.0f}s after the traffic stopped; collector exit {r['rc']}")  # fmt: skip
    for line in a.lines():
        print(line)
    print(f"counters over the {len({s.pid for s in r['samples']})} collector processes: {final.stored} trace rows "
          f"written for {a.stored + a.unknown} traces, {final.judged} judgments made for {a.judged}, "
          f"{final.late_spans} late spans, {final.traces_dropped} traces dropped")  # fmt: skip
    print(f"faults ({len(r['faults'])} of {len(r['planned'])} planned):")
    for f in r["faults"]:
        print("  " + f.line())
    for exc in r["fault_errors"]:
        print(f"  fault error: {exc!r}")
    rss, rss_ok = rss_report(r["samples"])
    steady, steady_ok = steady_report(r["samples"], r["faults"], args.max_lag)
    for line in rss + steady:
        print(line)
    recovered = len(r["faults"]) == len(r["planned"]) and all(
        f.recovered_s is not None and f.judge_resumed_s is not None for f in r["faults"]
    )
    once = not a.problems and stats["spans_dropped"] == 0 and r["rc"] == 0
    verdicts = {
        "exactly once": "yes" if once else "NO: " + "; ".join(a.problems or ["spans dropped or exit != 0"]),
        "complete": "yes"
        if not a.incomplete
        else f"NO: {len(a.incomplete)} traces lack spans, "
        f"{final.late_spans} late spans counted (docs/collector.md#assembly)",
        "faults recovered": "yes" if recovered and not r["fault_errors"] else "NO",
        "RSS flat": "yes" if rss_ok else "NO",
        "ingest lag bounded": "yes" if steady_ok else "NO",
    }
    for name, verdict in verdicts.items():
        print(f"{name}: {verdict}")
    return all(v == "yes" for v in verdicts.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=200.0, help="demo requests per second")
    parser.add_argument("--sampling", type=float, default=1.0)
    parser.add_argument(
        "--faults", default="auto", help="auto, none, or name@minutes,... (collector, broker, storage)"
    )
    parser.add_argument("--storage-outage-s", type=float, default=45.0)
    parser.add_argument(
        "--broker-down-s", type=float, default=5.0, help="seconds between the broker's stop and start"
    )
    parser.add_argument("--delivery-timeout-ms", type=int, default=120_000, help="the agent producer's")
    parser.add_argument("--assembly-timeout-s", type=float, help="the collector's (default: the product's)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--max-lag", type=int, default=2000, help="bound on the consumer lag outside faults")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-results" / "soak")
    parser.add_argument("--workdir", type=Path, help="keep the database, broker data and logs here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    csv_path, png_path = args.out / "soak.csv", args.out / "soak.png"
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"soak: {args.minutes:g} min at {args.rate:g} requests/s, sampling {args.sampling:g}, "
          f"faults {args.faults}; {load}", flush=True)  # fmt: skip
    keep = contextlib.nullcontext(str(args.workdir)) if args.workdir else None
    with (
        keep or tempfile.TemporaryDirectory(prefix="ragpulse-soak-") as tmp,
        open(csv_path, "w", newline="") as fh,
    ):
        writer = csv.writer(fh)
        writer.writerow(Sample.header())

        def record(s: Sample) -> None:
            writer.writerow(s.row())
            fh.flush()
            print(f"  t={s.t:7.1f}s pid={s.pid} rss={s.rss_bytes >> 20} MiB fds={s.fds} buf={s.assembly_buffer} "
                  f"lag={s.spans_lag} uncommitted={s.spans_uncommitted}+{s.judge_lag} unacked={s.producer_in_flight} served={s.served} "
                  f"stored={s.stored} judged={s.judged}", flush=True)  # fmt: skip

        result = soak(args, Path(tmp), record)
    ok = report(args, result)
    title = f"ragpulse soak: {args.rate:g} req/s through Kafka, sampling {args.sampling:g}, faults shaded"
    plot(result["samples"], result["faults"], png_path, title)
    print(f"samples: {csv_path}\nplot: {png_path}\nobjectives {'hold' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
