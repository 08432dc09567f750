"""Session-scoped fixtures that start real services on demand.

A service that cannot start fails the test that asked for it with the reason
(ServiceError carries the log tail); nothing is skipped silently. Every process
a fixture starts is stopped by PID when the session ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.services import KafkaBroker, helm_binary, promtool_binary

# litellm otherwise tries the network at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A real single-node Kafka 4.x broker (KRaft) shared by the session."""
    broker = KafkaBroker(workdir=tmp_path_factory.mktemp("kafka"), partitions=2)
    broker.start()
    try:
        yield broker
    finally:
        broker.cleanup()


@pytest.fixture(scope="session")
def promtool() -> str:
    return promtool_binary()


@pytest.fixture(scope="session")
def helm() -> str:
    return helm_binary()
