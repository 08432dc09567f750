"""Soak: steady demo-app load through a real Kafka broker for 30 minutes, sampled and plotted.

Runs :class:`tests.soak_run.SoakRun` (a real broker, one ``ragpulse collect``
with ingest and the local judge, the demo policy assistant exporting to Kafka
at a fixed rate) and every ``--interval`` seconds records the collector's
RSS, open file descriptors and threads, its assembly buffer, the consumer lag
of the spans and judge topics, and the agent's unacknowledged records. Writes
the samples to a CSV and plots them to a PNG (matplotlib, the ``bench`` extra).

Objectives: over the last 20 minutes the collector's RSS grows by less than
5% (median of the last three samples against the median of the three at the
start of the window), and the consumer lag stays bounded (its maximum in the
window below ``--max-lag`` records and no monotonic growth).

Usage: .venv/bin/python bench/soak.py [--minutes 30] [--rate 20] [--sampling 0.1]
       [--interval 10] [--out bench-results/soak]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.soak_run import Sample, SoakRun, grows_monotonically  # noqa: E402

WINDOW_S = 20 * 60


def plot(samples: list[Sample], path: Path, title: str) -> None:
    """Four panels: memory, descriptors/threads, buffers, consumer lag."""
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
    axes[3].plot(t, [s.judge_lag for s in samples], label="judge topic lag (records)")
    axes[3].set_xlabel("minutes")
    for ax in axes:
        ax.legend(loc="upper left", fontsize=8)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def summarize(samples: list[Sample], max_lag: int) -> tuple[list[str], bool]:
    """Lines for the report and whether both objectives hold."""
    end = samples[-1].t
    window = [s for s in samples if s.t >= end - WINDOW_S] if end > WINDOW_S else samples[len(samples) // 3 :]
    first = statistics.median(s.rss_bytes for s in window[:3])
    last = statistics.median(s.rss_bytes for s in window[-3:])
    growth = (last - first) / first
    lag = [s.spans_lag + s.judge_lag for s in window]
    rate = (samples[-1].served - samples[0].served) / max(1.0, end - samples[0].t)
    lines = [
        f"{len(samples)} samples over {end / 60:.1f} min; served {samples[-1].served} requests ({rate:.1f}/s), "
        f"stored {samples[-1].stored} traces, judged {samples[-1].judged}",
        f"collector RSS over the last {(window[-1].t - window[0].t) / 60:.1f} min: {first / 2**20:.1f} -> "
        f"{last / 2**20:.1f} MiB ({growth * 100:+.2f}%; objective < 5%); "
        f"peak {max(s.rss_bytes for s in samples) / 2**20:.1f} MiB",
        f"open fds {min(s.fds for s in window)}-{max(s.fds for s in window)} (other than per-thread /proc "
        f"files: {min(s.fds_other for s in window)}-{max(s.fds_other for s in window)}), threads "
        f"{min(s.threads for s in window)}-{max(s.threads for s in window)}, assembly buffer max "
        f"{max(s.assembly_buffer for s in window)}, agent unacknowledged max {max(s.producer_in_flight for s in window)}",
        f"consumer lag (spans + judge) in the window: max {max(lag)}, last {lag[-1]} records (bound {max_lag})",
    ]
    ok = growth < 0.05 and max(lag) <= max_lag and not grows_monotonically([float(x) for x in lag])
    return lines, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=20.0, help="demo requests per second")
    parser.add_argument("--sampling", type=float, default=0.1)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--max-lag", type=int, default=2000, help="bound on the consumer lag (records)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-results" / "soak")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path, png_path = args.out / "soak.csv", args.out / "soak.png"
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"soak: {args.minutes:g} min at {args.rate:g} requests/s, sampling {args.sampling:g}; {load}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="ragpulse-soak-") as tmp, open(csv_path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(Sample.header())

        def record(s: Sample) -> None:
            writer.writerow(s.row())
            fh.flush()
            print(f"  t={s.t:7.1f}s rss={s.rss_bytes >> 20} MiB fds={s.fds} buf={s.assembly_buffer} "
                  f"lag={s.spans_lag}+{s.judge_lag} served={s.served}", flush=True)  # fmt: skip

        with SoakRun(Path(tmp), rate=args.rate, sampling=args.sampling) as soak:
            samples = soak.run(args.minutes * 60, args.interval, on_sample=record)
    lines, ok = summarize(samples, args.max_lag)
    plot(samples, png_path, f"ragpulse soak: {args.rate:g} req/s through Kafka, sampling {args.sampling:g}")
    for line in lines:
        print(line)
    print(f"samples: {csv_path}\nplot: {png_path}\nobjectives {'hold' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
