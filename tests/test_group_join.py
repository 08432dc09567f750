"""Group joins finish: the guard against kafka-python 3.0.12's unfinished-join race.

Real broker. A fresh consumer group whose member joins before the topic's
metadata has arrived is led through a second, metadata-triggered join. Short
polls make it likely that a poll gives up while that join is in flight, which
is the window in which kafka-python drops the join's result (see
``ragpulse.collector.kafka.group_join``). Without the guard about one join in twenty
stays unfinished at 200 ms polls, and more at the 20 ms polls used here; with
it every join must finish.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from ragpulse.collector.kafka.group_join import keep_join_going

from tests.services import KafkaBroker

pytestmark = pytest.mark.services

JOINS = 30
JOIN_DEADLINE_S = 20.0  # a healthy join here takes well under a second


def _join(bootstrap: str, topic: str, group: str, check: Any = None) -> tuple[bool, int, float]:
    """Subscribe a fresh member of ``group`` and poll with the guard until it holds both
    partitions; returns (joined, times the guard had to act, seconds taken). ``check`` is
    called with the joined consumer before it is closed."""
    from kafka import KafkaConsumer
    from kafka.structs import MemberState

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    nudges = 0
    start = time.monotonic()
    try:
        while time.monotonic() - start < JOIN_DEADLINE_S:
            consumer.poll(timeout_ms=20)
            nudges += keep_join_going(consumer)
            if consumer._coordinator.state == MemberState.STABLE and len(consumer.assignment()) == 2:
                if check is not None:
                    check(consumer)
                return True, nudges, time.monotonic() - start
        return False, nudges, time.monotonic() - start
    finally:
        consumer.close(autocommit=False)


def test_every_group_join_finishes(kafka_broker: KafkaBroker) -> None:
    topic = f"join-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 2)
    results = [_join(kafka_broker.bootstrap, topic, f"{topic}-g{i}") for i in range(JOINS)]
    unfinished = [i for i, (joined, _, _) in enumerate(results) if not joined]
    assert not unfinished, f"joins {unfinished} never finished within {JOIN_DEADLINE_S}s"
    # The metadata-triggered second join was reached (else this test proves nothing).
    assert sum(n for _, n, _ in results) > 0


def test_a_joined_member_is_left_alone(kafka_broker: KafkaBroker) -> None:
    from kafka import KafkaConsumer

    topic = f"join-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 2)

    def stable_member_untouched(consumer: Any) -> None:
        assert consumer._coordinator.rejoin_needed is False
        assert keep_join_going(consumer) is False
        assert consumer._coordinator.rejoin_needed is False  # no needless rebalance

    assert _join(kafka_broker.bootstrap, topic, f"{topic}-g", stable_member_untouched)[0]
    standalone = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, enable_auto_commit=False)
    try:
        assert keep_join_going(standalone) is False  # no group: never rebalancing
    finally:
        standalone.close()
    assert keep_join_going(object()) is False  # not a kafka-python consumer at all


def test_the_guard_is_pinned_to_the_version_it_is_tested_on() -> None:
    """pyproject.toml pins kafka-python to the guard's tested minor version, and the installed
    kafka-python is that version (otherwise the tests above test a guard that is skipped)."""
    import re
    from pathlib import Path

    import kafka
    from ragpulse.collector.kafka.group_join import TESTED_MINOR, guard_applies

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    pins = set(re.findall(r'"kafka-python([^"]*)"', pyproject))
    major, minor = (int(x) for x in TESTED_MINOR.split("."))
    assert pins == {f">={TESTED_MINOR}.12,<{major}.{minor + 1}"}, pins
    assert guard_applies(kafka.__version__), kafka.__version__
    assert not guard_applies(f"{major}.{minor + 1}.0") and not guard_applies(f"{major + 1}.{minor}.0")


def test_outside_the_tested_version_the_guard_stands_aside(
    kafka_broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another kafka-python: the private coordinator is not read (logged once), the guard does
    nothing and the rebalance watch reads "not rebalancing"."""
    import kafka
    from kafka import KafkaConsumer
    from kafka.structs import MemberState
    from ragpulse.collector.kafka import group_join
    from ragpulse.collector.kafka.liveness import rebalancing

    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, enable_auto_commit=False)
    try:
        consumer._coordinator.state = MemberState.REBALANCING
        consumer._coordinator.rejoin_needed = False
        monkeypatch.setattr(kafka, "__version__", "3.1.0")
        monkeypatch.setattr(group_join, "_checked", {})
        with caplog.at_level("WARNING", logger="ragpulse.collect"):
            assert keep_join_going(consumer) is False
            assert rebalancing(consumer) is False
        assert consumer._coordinator.rejoin_needed is False
        assert [r.getMessage() for r in caplog.records] == [
            "group-join guard and rebalance watch skipped: kafka-python 3.1.0 is not the tested 3.0.x"
        ]
        monkeypatch.setattr(kafka, "__version__", "3.0.12")
        monkeypatch.setattr(group_join, "_checked", {})
        assert rebalancing(consumer) is True and keep_join_going(consumer) is True
    finally:
        consumer._coordinator.state = MemberState.UNJOINED
        consumer.close()
