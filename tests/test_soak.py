"""The soak's CI versions: steady demo traffic through Kafka, with and without faults.

Opt-in (``pytest -m soak``): each takes minutes, which does not fit the suite's CI budget
next to the fault tests. Both run :class:`tests.soak_run.SoakRun` (real broker, real
``ragpulse collect``, the demo app on the agent's Kafka exporter).

* 3 minutes without faults: after a minute of warm-up, no count grows monotonically: the
  assembly buffer, the spans topic's consumer lag, the judge group's uncommitted records,
  the agent's unacknowledged records, the collector's threads and its file descriptors other
  than the three ``/proc/PID/task/TID`` files chDB keeps open per thread (those are bounded
  by the thread count, checked itself). Counts, never times.
* About 4 minutes with the three faults of bench/soak.py (tests/soak_faults.py: collector
  SIGKILL, broker restart, storage out of disk space) at 50 answers/s, every trace sampled:
  afterwards every served trace is stored exactly once and complete, and judged exactly once
  (tests/soak_audit.py), the agent dropped no span, and ingest and judging came back after
  each fault. The collector's assembly timeout is set above the broker's restart (the
  documented setting for gaps between a trace's records, docs/collector.md#assembly), so a
  trace whose records straddle the restart is complete too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.soak_audit import audit
from tests.soak_faults import DiskFloor, FaultSchedule
from tests.soak_run import SoakRun, grows_monotonically

pytestmark = [pytest.mark.services, pytest.mark.soak]

WARM_UP_S = 60.0
SERIES = ("assembly_buffer", "spans_lag", "judge_lag", "producer_in_flight", "threads", "fds_other")
FAULTS = [
    (25.0, "collector"),
    (60.0, "broker"),
    (110.0, "storage"),
]  # each starts once the one before recovered


def test_three_minutes_of_traffic_grow_no_buffer_or_descriptor_count(tmp_path: Path) -> None:
    with SoakRun(tmp_path, rate=20.0, sampling=0.1) as soak:
        samples = soak.run(180.0, interval_s=10.0)
    steady = [s for s in samples if s.t >= WARM_UP_S]
    assert len(steady) >= 10 and steady[-1].stored > 0 and steady[-1].judged > 0
    growing = {name: [getattr(s, name) for s in steady] for name in SERIES}
    assert not [n for n, values in growing.items() if grows_monotonically(values)], growing


def test_faults_under_traffic_every_served_trace_stored_and_judged_exactly_once(tmp_path: Path) -> None:
    import ragpulse.agent as agent

    try:
        floor = DiskFloor(tmp_path / "floor")
    except RuntimeError as exc:  # the storage fault needs ~20 GiB free to take away
        pytest.skip(str(exc))
    options = {"delivery_timeout_ms": 300_000}
    with SoakRun(tmp_path / "run", rate=50.0, sampling=1.0, chdb_config=floor.config, kafka_options=options,
                 assembly_timeout_s=180.0) as soak:  # fmt: skip
        base = agent.stats()
        schedule = FaultSchedule(soak, FAULTS, floor, storage_outage_s=15.0, broker_down_s=2.0)
        soak.run(150.0, interval_s=10.0, faults=schedule)
        soak.drain()
        end = agent.stats()
        assert soak.stop_collector() == 0, soak.collector and soak.collector.log_tail()
        result = audit(soak.db, soak.traffic.served_ids(), sampling_rate=1.0)
    lines = [f.line() for f in schedule.records] + result.lines()
    print("\n" + "\n".join(lines))
    assert not schedule.errors, schedule.errors
    assert [f.name for f in schedule.records] == [name for _, name in FAULTS]
    assert all(f.recovered_s is not None and f.judge_resumed_s is not None for f in schedule.records), lines
    refused = re.search(r", (\d+) NOT_ENOUGH_SPACE lines", schedule.records[2].detail)
    assert refused and int(refused.group(1)) > 0, schedule.records[
        2
    ].detail  # chDB itself refused the inserts
    assert end["spans_dropped"] == base["spans_dropped"], end["dropped"]
    assert result.served == soak.traffic.served > 0
    assert not result.problems and not result.incomplete, lines
    assert result.judged == result.stored == result.served, lines
