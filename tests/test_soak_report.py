"""bench/soak.py's RSS objective on made-up series: what counts as flat, and what does not.

The objective (bench/soak.py, ``rss_report``): over the last collector process's fault-free
tail (from the last fault's recovery plus two minutes to the end, at least eight minutes) the
median of the last three minutes is less than 5% above that of the first three, the series does
not rise monotonically, and the faults left no step of 10% or more against the last three
fault-free minutes before them.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.soak import fault_free, rss_report
from tests.soak_faults import FaultRecord
from tests.soak_run import Sample

MIB = 1 << 20


def _series(
    minutes: float, rss_mib: Callable[[float], float], pid: int = 1, start: float = 0.0
) -> list[Sample]:
    """A sample every 10 s from ``start`` for ``minutes``; ``rss_mib(t)`` gives the RSS (a third anonymous)."""
    out = []
    for k in range(int(minutes * 6)):
        t = start + k * 10.0
        rss = int(rss_mib(t) * MIB)
        out.append(Sample(t=t, scrape_s=0.1, pid=pid, rss_bytes=rss, rss_anon_bytes=rss // 3, rss_file_bytes=rss - rss // 3,
                          fds=50, fds_other=30, threads=30, assembly_buffer=0, spans_lag=0, spans_uncommitted=0, judge_lag=0,
                          judge_consumer_lag=0, producer_in_flight=0, app_rss_bytes=0, served=0, stored=0, judged=0,
                          late_spans=0, traces_dropped=0))  # fmt: skip
    return out


def _fault(name: str, start_min: float, recovered_min: float | None) -> FaultRecord:
    recovered = None if recovered_min is None else recovered_min * 60
    return FaultRecord(name, start_min * 60, start_min * 60 + 30, recovered, recovered, 100, 1000, (0, 0), "")


def _wobble(t: float) -> float:
    return 8.0 * ((int(t) // 10) % 3 - 1)  # +-8 MiB, never monotonic


def test_a_flat_tail_after_faults_that_leave_no_step_is_flat() -> None:
    samples = _series(20, lambda t: 500 + _wobble(t))
    lines, ok = rss_report(samples, [_fault("broker", 4, 5), _fault("storage", 7, 8.5)])
    assert ok, lines
    # busy: the first 2 min, the broker 4:00-5:00 and the storage 7:00-8:30, each + 2 min to settle
    runs = fault_free(samples, [_fault("broker", 4, 5), _fault("storage", 7, 8.5)])
    assert [(r[0].t, r[-1].t) for r in runs] == [(130.0, 230.0), (640.0, 1190.0)]


def test_a_step_at_a_fault_is_not_flat_even_when_the_tail_is() -> None:
    samples = _series(20, lambda t: (500 if t < 7 * 60 else 580) + _wobble(t))  # +16% at the storage outage
    lines, ok = rss_report(samples, [_fault("broker", 4, 5), _fault("storage", 7, 8.5)])
    assert not ok and any("step over the faults" in line and "+16." in line for line in lines), lines


def test_a_slow_leak_in_the_tail_is_not_flat() -> None:
    samples = _series(
        20, lambda t: 500 + 3.0 * t / 60 + _wobble(t)
    )  # 3 MiB a minute: about +6% over the tail
    lines, ok = rss_report(samples, [_fault("storage", 4, 5)])
    assert not ok, lines


def test_a_tail_too_short_or_a_fault_that_never_recovered_is_not_judged_flat() -> None:
    samples = _series(12, lambda t: 500 + _wobble(t))
    assert not rss_report(samples, [_fault("storage", 4, 5)])[1]  # 12 - 7 = 5 fault-free minutes
    samples = _series(30, lambda t: 500 + _wobble(t))
    lines, ok = rss_report(samples, [_fault("storage", 4, None)])
    assert not ok and "no fault-free tail" in lines[-1], lines


def test_the_last_process_is_judged_from_its_own_start() -> None:
    first = _series(5, lambda t: 300 + _wobble(t))  # SIGKILLed at 5 min; the next one starts bigger
    second = _series(20, lambda t: 520 + _wobble(t), pid=2, start=5 * 60 + 10)
    lines, ok = rss_report(first + second, [_fault("collector", 5, 5.5)])
    assert ok, lines  # no stretch of its own before a fault: no step to measure, the tail is flat
    assert "no fault-free stretch before the first fault" in "\n".join(lines)
