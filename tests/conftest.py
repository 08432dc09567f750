"""Session-scoped fixtures that start real services on demand.

A service that cannot start fails the test that asked for it with the reason
(ServiceError carries the log tail); nothing is skipped silently. Every process
a fixture starts is stopped by PID when the session ends.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ragpulse.collector.storage.clickhouse import Storage

from tests.services import KafkaBroker, helm_binary, promtool_binary

pytest_plugins = ["tests.agent_memory"]  # the agent span tests' in-memory exporter fixture

# litellm otherwise tries the network at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# A suite started in the background by a non-interactive shell (`.ci/run &`, nohup) inherits
# SIGINT ignored, and so would every child it starts; the tests that press Ctrl-C on a child
# (demo, collect) need the default disposition there. A Python handler is reset to the default
# across exec, an ignored signal is not.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _descendants(root: int) -> list[tuple[int, str]]:
    """(pid, command) of every live process below ``root``, read from /proc."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if rest[0] == "Z":
            continue
        pid = int(entry)
        names[pid] = name
        children.setdefault(int(rest[1]), []).append(pid)
    found: list[tuple[int, str]] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append((pid, names[pid]))
        stack.extend(children.get(pid, []))
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a process started by the tests outlived them (and reap it)."""
    leftovers = _descendants(os.getpid())
    if not leftovers:
        return
    for pid, _ in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    listing = ", ".join(f"{pid} ({name})" for pid, name in leftovers)
    print(
        f"\nERROR: processes started by the tests were still running at the end: {listing}", file=sys.stderr
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A real single-node Kafka 4.x broker (KRaft) shared by the session."""
    broker = KafkaBroker(workdir=tmp_path_factory.mktemp("kafka"), partitions=2)
    broker.start()
    try:
        yield broker
    finally:
        broker.cleanup()


@pytest.fixture()
def chdb_storage(tmp_path: Path) -> Iterator[Storage]:
    """A fresh in-process chDB database with the ragpulse schema, closed after the test."""
    st = Storage(f"chdb://{tmp_path / 'db'}")
    st.apply_schema()
    yield st
    st.close()


@pytest.fixture(scope="session")
def promtool() -> str:
    return promtool_binary()


@pytest.fixture(scope="session")
def helm() -> str:
    return helm_binary()
