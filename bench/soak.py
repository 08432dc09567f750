"""Soak: 30 minutes of demo-app load through a real Kafka broker, with faults, audited and plotted.

Runs :class:`tests.soak_run.SoakRun` (a real broker, one ``ragpulse collect`` with ingest
and the local judge, the demo policy assistant exporting to Kafka at a fixed rate and
recording every trace id it served) and every ``--interval`` seconds records the
collector's RSS (and its anonymous part), open file descriptors and threads, its assembly
buffer, the consumer lag of the spans and judge topics, and the agent's unacknowledged records. Meanwhile
tests/soak_faults.py's schedule SIGKILLs the collector (a new one starts on the same
database and groups), restarts the broker, and takes the storage's disk space away for
``--storage-outage-s`` (``--faults``: by default at 1/6, 2/6 and 3/6 of the run). After
the traffic stops and the pipeline drains, tests/soak_audit.py reads the database.

Objectives: every served trace is stored exactly once (rag_traces FINAL) and, sampled,
judged exactly once (rag_judgments FINAL), with no span dropped by the agent; every fault
recovers; the final collector's RSS is flat: over its fault-free tail (from 2 minutes after
the last fault's recovery to the end, at least 8 minutes) the median of the last 3 minutes is
less than 5% above that of the first 3 and the series does not rise monotonically, and the
faults left no step (the tail starts less than 10% above the last 3 fault-free minutes before
the first fault in that process); outside the faults the spans topic's consumer lag stays under
``--max-lag`` records and does not grow monotonically. The judge topic's lag is reported, from
the broker (the judge group's uncommitted records) and from the collector's own
``ragpulse_consumer_lag``.
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

SETTLE_S = 2 * 60  # after a process starts or a fault recovers, memory is not judged yet
TAIL_MIN_S = 8 * 60  # the fault-free tail the RSS objective needs
EDGE_S = 3 * 60  # RSS is compared as the median of a window's first and last 3 minutes
MAX_GROWTH = 0.05  # over the fault-free tail
MAX_STEP = 0.10  # across the faults
DRAIN_TIMEOUT_S = 3600.0  # the local judge may be far behind a 200/s run on a small machine


def plot(samples: list[Sample], faults: list[FaultRecord], path: Path, title: str) -> None:
    """Four panels: memory, descriptors/threads, buffers, consumer lag; faults shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s.t / 60 for s in samples]
    fig, axes = plt.subplots(4, 1, figsize=(9, 11), sharex=True)
    axes[0].plot(t, [s.rss_bytes / 2**20 for s in samples], label="collector RSS")
    axes[0].plot(t, [s.rss_anon_bytes / 2**20 for s in samples], label="collector RSS, anonymous")
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
    axes[3].plot(t, [s.judge_consumer_lag for s in samples], label="judge topic lag (ragpulse_consumer_lag)")
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


def _mib(samples: list[Sample], field: str = "rss_bytes") -> float:
    return statistics.median(getattr(s, field) for s in samples) / 2**20


def _edge(window: list[Sample], last: bool) -> list[Sample]:
    """The samples of ``window``'s first (or last) EDGE_S."""
    if last:
        return [s for s in window if s.t >= window[-1].t - EDGE_S]
    return [s for s in window if s.t <= window[0].t + EDGE_S]


def fault_free(own: list[Sample], faults: list[FaultRecord]) -> list[list[Sample]]:
    """One process's samples outside its first SETTLE_S and outside every fault (its start to its
    ingest recovery, plus SETTLE_S), as runs of consecutive samples; a fault that did not
    recover covers the rest of the run."""
    busy = [(own[0].t, own[0].t + SETTLE_S)] + [
        (f.start_s, (f.recovered_s if f.recovered_s is not None else float("inf")) + SETTLE_S) for f in faults
    ]
    runs: list[list[Sample]] = [[]]
    for s in own:
        if any(a <= s.t <= b for a, b in busy):
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(s)
    return [r for r in runs if r]


def rss_report(samples: list[Sample], faults: list[FaultRecord]) -> tuple[list[str], bool]:
    """RSS of each collector process, and the objective on the last one: over its fault-free tail
    (from the last fault's recovery + SETTLE_S to the end, at least TAIL_MIN_S) the median RSS of
    the last EDGE_S is less than MAX_GROWTH above that of the first EDGE_S, the series does not
    rise monotonically, and the faults left no step: the tail starts less than MAX_STEP above
    the last EDGE_S of the process's fault-free stretch before its first fault."""
    lines = ["collector RSS (medians of 3-minute windows):"]
    for pid in dict.fromkeys(s.pid for s in samples):
        own = [s for s in samples if s.pid == pid]
        a, b = _edge(own, last=False), _edge(own, last=True)
        lines.append(
            f"  pid {pid}: {own[0].t / 60:.1f}-{own[-1].t / 60:.1f} min, first 3 min {_mib(a):.1f} MiB, last 3 min "
            f"{_mib(b):.1f} MiB (anonymous {_mib(a, 'rss_anon_bytes'):.1f} -> {_mib(b, 'rss_anon_bytes'):.1f}), "
            f"peak {max(s.rss_bytes for s in own) / 2**20:.1f} MiB, threads {own[0].threads} -> {own[-1].threads}"
        )
    own = [s for s in samples if s.pid == samples[-1].pid]
    runs = fault_free(own, faults)
    tail = runs[-1] if runs and runs[-1][-1] is own[-1] else []
    if not tail:
        return [
            *lines,
            "last process: no fault-free tail (a fault did not recover, or it ended the run)",
        ], False
    first, last = _edge(tail, last=False), _edge(tail, last=True)
    growth = _mib(last) / _mib(first) - 1
    rising = grows_monotonically([float(s.rss_bytes) for s in tail])
    span = tail[-1].t - tail[0].t
    lines.append(
        f"last process, fault-free tail {tail[0].t / 60:.1f}-{tail[-1].t / 60:.1f} min ({span / 60:.1f} min, "
        f"objective needs {TAIL_MIN_S / 60:.0f}): first 3 min {_mib(first):.1f} MiB, last 3 min {_mib(last):.1f} MiB "
        f"({growth * 100:+.2f}%, objective < {MAX_GROWTH * 100:.0f}%; anonymous {_mib(first, 'rss_anon_bytes'):.1f} -> "
        f"{_mib(last, 'rss_anon_bytes'):.1f} MiB), monotonic: {rising}"
    )
    ok = span >= TAIL_MIN_S and growth < MAX_GROWTH and not rising
    if len(runs) > 1:
        before = _edge(runs[0], last=True)
        step = _mib(first) / _mib(before) - 1
        lines.append(
            f"step over the faults: {_mib(before):.1f} MiB before the first ({before[0].t / 60:.1f}-"
            f"{before[-1].t / 60:.1f} min) -> {_mib(first):.1f} MiB at the tail's start ({step * 100:+.2f}%, objective "
            f"< {MAX_STEP * 100:.0f}%; threads {before[-1].threads} -> {first[0].threads}, anonymous "
            f"{_mib(before, 'rss_anon_bytes'):.1f} -> {_mib(first, 'rss_anon_bytes'):.1f} MiB)"
        )
        ok = ok and step < MAX_STEP
    else:
        lines.append("step over the faults: no fault-free stretch before the first fault in this process")
    return lines, ok


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
        f"over the run); the judge topic's ragpulse_consumer_lag max {max(s.judge_consumer_lag for s in samples)}, "
        f"at the end {samples[-1].judge_consumer_lag}",
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
    rss, rss_ok = rss_report(r["samples"], r["faults"])
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
            print(f"  t={s.t:7.1f}s pid={s.pid} rss={s.rss_bytes >> 20} (anon {s.rss_anon_bytes >> 20}) MiB threads={s.threads} fds={s.fds} buf={s.assembly_buffer} "
                  f"lag={s.spans_lag}+{s.judge_consumer_lag} uncommitted={s.spans_uncommitted}+{s.judge_lag} unacked={s.producer_in_flight} served={s.served} "
                  f"stored={s.stored} judged={s.judged}", flush=True)  # fmt: skip

        result = soak(args, Path(tmp), record)
    ok = report(args, result)
    title = f"ragpulse soak: {args.rate:g} req/s through Kafka, sampling {args.sampling:g}, faults shaded"
    plot(result["samples"], result["faults"], png_path, title)
    print(f"samples: {csv_path}\nplot: {png_path}\nobjectives {'hold' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
