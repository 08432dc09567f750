"""A SIGKILLed judge worker's partitions move after ``kafka.session_timeout_ms``, as the ingest loop's do.

A killed member sends no LeaveGroup: the broker takes its partitions away only when its
session expires, and until then nobody judges them. The judge loop's consumer must join with
the configured session timeout (kafka-python's default is 45 s). Times are not measured
here: the broker's own session expiry is compared with a reference member's. A plain
consumer in another group, joined with twice the configured timeout, is SIGKILLed at the
same moment as a ``ragpulse collect --role judge`` process; the collector's dead member must
be dropped from its group first.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest

from tests.services import reaped, wait_for_line
from tests.test_collector_kafka import Setup, setup_factory  # noqa: F401 - the fixture

pytestmark = pytest.mark.services

SESSION_MS = 6000  # tests/test_collector_kafka.py's Setup configures this

REFERENCE = """
import sys
from kafka import KafkaConsumer
c = KafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3], session_timeout_ms=int(sys.argv[4]),
                  heartbeat_interval_ms=int(sys.argv[4]) // 3, enable_auto_commit=False)
while not c.assignment():
    c.poll(timeout_ms=200)
print("joined", flush=True)
while True:
    c.poll(timeout_ms=200)
"""


def _members(admin: Any, group: str) -> int:
    """Members of ``group`` (-1 while its coordinator is not known yet)."""
    from kafka.errors import KafkaError

    try:
        return len(admin.describe_groups([group])[group]["members"])
    except KafkaError:
        return -1


def test_killed_judge_member_leaves_its_group_within_the_configured_session(
    setup_factory: Any,  # noqa: F811 - the fixture imported above
) -> None:
    from kafka import KafkaAdminClient

    s: Setup = setup_factory(judge={"enabled": True, "judge": "local"})
    assert s.config["kafka"]["session_timeout_ms"] == SESSION_MS
    judge_group, reference_group = (
        s.config["kafka"]["judge_group_id"],
        s.config["kafka"]["judge_group_id"] + "-ref",
    )
    argv = [
        sys.executable,
        "-c",
        REFERENCE,
        s.broker.bootstrap,
        s.judge,
        reference_group,
        str(2 * SESSION_MS),
    ]
    admin = KafkaAdminClient(bootstrap_servers=s.broker.bootstrap)
    proc = s.collector(role="judge")
    with reaped(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)) as reference:
        try:
            wait_for_line(reference, "joined", 60)
            deadline = time.monotonic() + 120  # start-up on a loaded machine
            while _members(admin, judge_group) != 1:
                assert proc.alive() and time.monotonic() < deadline, proc.log_tail()
                time.sleep(0.2)
            proc.kill()
            reference.kill()
            order = []
            deadline = (
                time.monotonic() + 120
            )  # kafka-python's 45 s default, with room (a tie counts against the judge)
            while len(order) < 2 and time.monotonic() < deadline:
                order += [
                    g for g in (reference_group, judge_group) if g not in order and _members(admin, g) == 0
                ]
                time.sleep(0.1)
        finally:
            admin.close()
    assert order[:1] == [judge_group], order
