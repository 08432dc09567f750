"""Faults injected into a running soak (tests/soak_run.py): broker restart, storage outage, collector SIGKILL.

Each fault is the mechanism of its own fault test, applied to the soak's live pipeline:

* ``broker``: the :class:`tests.services.KafkaBroker` stopped by PID (SIGTERM to its process
  group, SIGKILL after 15 s) and started again on the same ports and log directory, as in
  tests/test_faults_broker.py.
* ``storage``: chDB is embedded in the collector, so nothing outside that process can stop
  or block it once it has opened its database (tests.services.chdb_holder only keeps a
  collector that has not opened it yet from starting). As in tests/test_faults_storage.py,
  the collector's chDB runs with a ``keep_free_space_bytes`` floor under the disk's free
  space (:class:`DiskFloor`), and a ballast file (``posix_fallocate``: real blocks) takes
  the space above the floor away: every insert, and so every store of traces and judgments,
  fails with ClickHouse's own ``NOT_ENOUGH_SPACE`` until the ballast is deleted.
* ``collector``: the collector's process group SIGKILLed and a new ``ragpulse collect``
  started on the same database, topics and groups (:meth:`SoakRun.restart_collector`), as
  in tests/test_collector_kafka.py's crash test.

:class:`FaultSchedule` runs them at set times beside the traffic and records, for each, when
it began, when the component was back, when ingest had recovered (the ingest group's
uncommitted records, read from the broker, plus the agent's unacknowledged records back under
their level in the ``BASELINE_S`` before the fault, or under one second of traffic, whichever
is larger) and when judging had resumed (the first judgment stored after the component was
back); the judge group's backlog is reported beside it, since the local judge may not keep up
with the traffic on a small machine at all.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.background import Background
from tests.soak_run import SCRAPE_TIMEOUT_S, SoakRun, scrape
from tests.test_faults_storage import _chdb_config

__all__ = ["DiskFloor", "FaultRecord", "FaultSchedule", "FAULTS", "parse_plan"]

FAULTS = ("collector", "broker", "storage")
BASELINE_S = 20.0  # the backlog is read this long before a fault, once a second
STEADY_POLLS = 3  # recovered: the backlog under its bound this many reads in a row
RECOVERY_TIMEOUT_S = 900.0


class DiskFloor:
    """A chDB ``config-file`` whose ``keep_free_space_bytes`` sits ``headroom`` bytes under the free
    space of ``folder``'s disk now, and the ballast that takes the space above it away.

    The headroom covers what the soak's own database and broker log, and anything else on the
    disk, write before the outage; the ballast is sized when it is placed (the space above the
    floor then, plus ``margin`` so that files others delete meanwhile do not end the outage)."""

    def __init__(self, folder: Path, headroom: int = 16 << 30, margin: int = 4 << 30) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.keep_free = shutil.disk_usage(folder).free - headroom
        if self.keep_free <= 0:
            raise RuntimeError(f"the disk of {folder} has less than {headroom >> 30} GiB free")
        self.config = _chdb_config(folder / "chdb-floor.xml", self.keep_free)
        self.ballast = folder / "ballast"
        self.margin = margin

    def fill(self) -> int:
        """Allocate the space above the floor plus the margin; returns the bytes allocated."""
        size = max(0, shutil.disk_usage(self.folder).free - self.keep_free) + self.margin
        fd = os.open(self.ballast, os.O_CREAT | os.O_WRONLY, 0o600)
        try:
            os.posix_fallocate(fd, 0, size)
        finally:
            os.close(fd)
        return size

    def release(self) -> None:
        """Give the space back."""
        self.ballast.unlink(missing_ok=True)


@dataclass
class FaultRecord:
    """One fault, in seconds after the traffic started; ``recovered_s`` (ingest) and
    ``judge_resumed_s`` are None when that did not happen within the run (or RECOVERY_TIMEOUT_S)."""

    name: str
    start_s: float
    back_s: float  # the broker answering again / a store succeeded after the space came back / new collector ready
    recovered_s: float | None
    judge_resumed_s: float | None
    bound: int  # the ingest backlog (records) counted as recovered
    peak_backlog: int
    judge_backlog: tuple[int, int]  # the judge group's uncommitted records before the fault and at the end
    detail: str

    @property
    def outage_s(self) -> float:
        return self.back_s - self.start_s

    @property
    def recovery_s(self) -> float | None:
        """From the component being back to the ingest backlog under its bound."""
        return None if self.recovered_s is None else self.recovered_s - self.back_s

    def line(self) -> str:
        rec = "not recovered" if self.recovery_s is None else f"ingest recovered {self.recovery_s:.1f}s after"
        judge = (
            "never" if self.judge_resumed_s is None else f"{self.judge_resumed_s - self.back_s:.1f}s after"
        )
        return (
            f"{self.name:9s} at {self.start_s / 60:5.2f} min: back after {self.outage_s:.1f}s, {rec} "
            f"(ingest backlog peak {self.peak_backlog}, bound {self.bound}), judging resumed {judge} "
            f"(judge backlog {self.judge_backlog[0]} -> {self.judge_backlog[1]}); {self.detail}"
        )


def parse_plan(text: str, duration_s: float) -> list[tuple[float, str]]:
    """``"collector@5,broker@10,storage@15"`` (minutes) -> [(seconds, name)]; ``"auto"`` spaces the
    three faults at 1/6, 2/6 and 3/6 of the run, so its second half runs without faults;
    ``""`` or ``"none"``: no faults."""
    if text in ("", "none"):
        return []
    if text == "auto":
        return [(duration_s * (i + 1) / 6, name) for i, name in enumerate(FAULTS)]
    plan = []
    for part in text.split(","):
        name, _, at = part.strip().partition("@")
        if name not in FAULTS or not at:
            raise ValueError(f"a fault is one of {', '.join(FAULTS)} with @minutes, got {part!r}")
        plan.append((float(at) * 60, name))
    return sorted(plan)


class FaultSchedule(Background):
    """Runs ``plan`` ([(seconds after traffic start, fault name)]) against ``soak``; ``records``
    holds what happened, ``errors`` what went wrong. A fault under way when the run ends is
    finished (the broker started, the ballast deleted) before :meth:`stop` returns."""

    join_s = RECOVERY_TIMEOUT_S + 300.0

    def __init__(
        self,
        soak: SoakRun,
        plan: list[tuple[float, str]],
        floor: DiskFloor | None = None,
        storage_outage_s: float = 45.0,
        broker_down_s: float = 5.0,
    ) -> None:
        super().__init__("soak-faults")
        if any(name == "storage" for _, name in plan) and floor is None:
            raise ValueError("the storage fault needs the DiskFloor the collector's chDB runs with")
        self.soak = soak
        self.plan = plan
        self.floor = floor
        self.storage_outage_s = storage_outage_s
        self.broker_down_s = broker_down_s
        self.records: list[FaultRecord] = []
        self.errors: list[BaseException] = []
        self._done = threading.Event()

    def done(self) -> bool:
        """Every fault injected and its recovery awaited (or the schedule stopped, or failed)."""
        return self._done.is_set()

    def _now(self) -> float:
        return time.monotonic() - self.soak.traffic.t0

    def _backlog(self) -> tuple[int, int, int]:
        """(the ingest backlog, -1 while unknown; the judge group's backlog; judgments so far)."""
        s = self.soak.sample()
        ingest = -1 if s.spans_uncommitted < 0 else s.spans_uncommitted + s.producer_in_flight
        return ingest, s.judge_lag, s.judged

    def _run(self) -> None:
        inject: dict[str, Callable[[], tuple[float, str]]] = {
            "collector": self._collector,
            "broker": self._broker,
            "storage": self._storage,
        }
        try:
            for at, name in self.plan:
                if self._stop.wait(max(0.0, at - BASELINE_S - self._now())):
                    return
                before = [self._backlog()]
                while self._now() < at and not self._stop.is_set():
                    self._stop.wait(1.0)
                    before.append(self._backlog())
                if self._stop.is_set():
                    return
                bound = max([b[0] for b in before] + [int(self.soak.rate)])
                start = self._now()
                back, detail = inject[name]()
                recovered, resumed, peak, judge_end = self._recovery(bound)
                self.records.append(FaultRecord(name, start, back, recovered, resumed, bound, peak,
                                                (before[-1][1], judge_end), detail))  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - reported by the owner
            self.errors.append(exc)
        finally:
            self._done.set()

    def _recovery(self, bound: int) -> tuple[float | None, float | None, int, int]:
        """(when the ingest backlog came under ``bound`` for STEADY_POLLS reads in a row, when the
        judged count first rose, the ingest backlog's peak, the judge backlog at the end)."""
        peak, under, first, resumed = 0, 0, 0.0, None
        _, judge, judged = self._backlog()
        deadline = time.monotonic() + RECOVERY_TIMEOUT_S
        while time.monotonic() < deadline and not self._stop.is_set():
            now, (backlog, judge, count) = self._now(), self._backlog()
            resumed = resumed if resumed is not None or count <= judged else now
            peak = max(peak, backlog)
            under = under + 1 if 0 <= backlog <= bound else 0
            first = now if under == 1 else first
            if under >= STEADY_POLLS and resumed is not None:
                return first, resumed, peak, judge
            self._stop.wait(1.0)
        return (first if under >= STEADY_POLLS else None), resumed, peak, judge

    def _collector(self) -> tuple[float, str]:
        old = self.soak.collector.proc.pid if self.soak.collector and self.soak.collector.proc else 0
        _killed, ready = self.soak.restart_collector()
        new = self.soak.collector.proc.pid if self.soak.collector and self.soak.collector.proc else 0
        return ready - self.soak.traffic.t0, f"SIGKILL pid {old}, pid {new} ready"

    def _broker(self) -> tuple[float, str]:
        broker = self.soak.broker
        pid, begin = broker.pid, time.monotonic()
        broker.stop()
        took = time.monotonic() - begin
        time.sleep(self.broker_down_s)  # the broker stays down this long by design
        broker.start(timeout=180)
        return self._now(), (
            f"pid {pid} stopped in {took:.1f}s, started {self.broker_down_s:.0f}s later as pid {broker.pid} "
            "on the same port and log directory"
        )

    def _storage(self) -> tuple[float, str]:
        assert self.floor is not None and self.soak.collector is not None
        log = self.soak.collector.log_path
        seen = log.stat().st_size
        start, size = self._now(), self.floor.fill()
        try:
            down = self._wait_storage(0, 180.0)
            if down is not None:
                time.sleep(
                    max(0.0, down + self.storage_outage_s - self._now())
                )  # the outage's length, by design
        finally:
            self.floor.release()
        if down is None:
            return self._now(), f"{size / 2**30:.1f} GiB ballast: storage never reported down (no outage)"
        up = self._wait_storage(1, RECOVERY_TIMEOUT_S)
        with open(log, "rb") as fh:
            fh.seek(seen)
            refused = fh.read().count(b"NOT_ENOUGH_SPACE")
        return (up if up is not None else self._now()), (
            f"{size / 2**30:.1f} GiB ballast, storage_up 0 after {down - start:.1f}s, held down "
            f"{self.storage_outage_s:.0f}s, {refused} NOT_ENOUGH_SPACE lines in the collector log"
        )

    def _wait_storage(self, value: int, timeout: float) -> float | None:
        """When ragpulse_storage_up read ``value`` (seconds after traffic start), None on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.soak.lock:
                m = scrape(self.soak.metrics_url, timeout=SCRAPE_TIMEOUT_S)
            if int(m.get("ragpulse_storage_up", -1)) == value:
                return self._now()
            time.sleep(0.5)
        return None
