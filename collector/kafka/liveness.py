"""Liveness: notice a Kafka poll that never returns, so ``/healthz`` can say so.

``KafkaConsumer.poll(timeout_ms=...)`` returns within its timeout, or within a
rebalance's few seconds. kafka-python 3.0.12 does its network work through
blocking cross-thread calls without timeouts (``NetworkSelector.run`` waits on
an ``Event`` for its IO thread), so a lost task there blocks a poll forever.
Nothing inside the process can unblock that, but a liveness probe can restart
the process, and offsets committed only after storage make a restart lose
nothing. Each polling loop wraps its poll in
:meth:`..serve.health.PollWatch.watching`; ``/healthz`` answers 503 while a
poll has been running longer than the stall limit.

The failure actually seen in tests is quieter: a consumer group join that
never completes while polls keep returning, with no partitions assigned. Its
cause, a kafka-python race, is worked around by
:mod:`.group_join`; as a second line of defence each loop also reports after
every poll whether its consumer is rebalancing (:func:`rebalancing`); a rebalance that lasts longer
than the broker could legitimately hold it (the rebalance timeout, i.e.
``max_poll_interval_ms``) plus the stall limit counts as stuck too.
"""

from __future__ import annotations

from typing import Any

from .group_join import coordinator

__all__ = ["rebalancing", "rebalance_allowance_s"]
_SYNC_ALLOWANCE_S = 30.0  # a SyncGroup round trip (kafka-python's request timeout)


def rebalance_allowance_s(max_poll_interval_ms: int) -> float:
    """The longest a legitimate group join may take for a consumer: the broker holds a join
    open for up to the rebalance timeout (``max_poll_interval_ms``), then the SyncGroup
    round trip follows."""
    return max_poll_interval_ms / 1000 + _SYNC_ALLOWANCE_S


def rebalancing(consumer: Any) -> bool:
    """True while a kafka-python consumer's group membership is being (re)negotiated.

    Reads the coordinator's member state, which kafka-python does not expose
    publicly (3.0.x: ``consumer._coordinator.state``, one of the string
    constants of ``kafka.structs.MemberState``), through the version guard of
    :func:`.group_join.coordinator`; any other version or shape reads as not
    rebalancing, so the watch fails open.
    """
    state = getattr(coordinator(consumer), "state", None)
    if state is None:
        return False
    from kafka.structs import MemberState

    return state == getattr(MemberState, "REBALANCING", object())
