"""The soak's CI version: 3 minutes of steady demo traffic through Kafka, counts that must not creep.

Opt-in (``pytest -m soak``): it does not fit the suite's CI budget next to the
fault tests. It runs :class:`tests.soak_run.SoakRun` (real broker, real
``ragpulse collect``, the demo app on the agent's Kafka exporter) and, after a
minute of warm-up, asserts that no count grows monotonically: the assembly
buffer, the consumer lag of both topics, the agent's unacknowledged records,
the collector's threads and its file descriptors other than the three
``/proc/PID/task/TID`` files chDB keeps open per thread (those are bounded by
the thread count, checked itself). Counts, never times.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak_run import SoakRun, grows_monotonically

pytestmark = [pytest.mark.services, pytest.mark.soak]

WARM_UP_S = 60.0
SERIES = ("assembly_buffer", "spans_lag", "judge_lag", "producer_in_flight", "threads", "fds_other")


def test_three_minutes_of_traffic_grow_no_buffer_or_descriptor_count(tmp_path: Path) -> None:
    with SoakRun(tmp_path, rate=20.0, sampling=0.1) as soak:
        samples = soak.run(180.0, interval_s=10.0)
    steady = [s for s in samples if s.t >= WARM_UP_S]
    assert len(steady) >= 10 and steady[-1].stored > 0 and steady[-1].judged > 0
    growing = {name: [getattr(s, name) for s in steady] for name in SERIES}
    assert not [n for n, values in growing.items() if grows_monotonically(values)], growing
