"""Keep a kafka-python consumer group join going until it finishes.

kafka-python 3.0.12 can leave a group join unfinished for good: the member
stays ``REBALANCING`` with no partitions and heartbeats off, while every
``poll()`` returns empty. This was the "group-join stall" our suite hit about
one full run in three. The race, read from kafka-python 3.0.12 and reproduced
against our test broker (3 of 60 fresh joins with 200 ms polls):

1. The group leader decides to rejoin because the topic metadata changed
   since it last assigned partitions (typically: its first join happened
   before the topic's metadata arrived, so it assigned nothing). That check
   (``assignment_snapshot != metadata_snapshot``) is the only reason to
   rejoin; the coordinator's own ``rejoin_needed`` flag stays False.
2. ``poll()`` starts the join as a background task and waits for it up to
   the poll's timeout. The task sends JoinGroup, and as leader performs the
   assignment, which sets ``assignment_snapshot = metadata_snapshot``.
3. The poll's timeout expires before the SyncGroup answer arrives. The task
   goes on and finishes, but only the poll that awaits it completes the join
   (member state ``STABLE``, heartbeats on, partitions assigned).
4. The next ``poll()`` asks ``need_rejoin()``, which is now False (the
   snapshots agree and the flag is False), so it never awaits the finished
   task again: the join is never completed.

:func:`keep_join_going`, called after every poll, sets the coordinator's
``rejoin_needed`` flag while the member is rebalancing. A poll then keeps
awaiting the join task and completes it (clearing the flag), or, when the
result was already dropped, starts one more join, which the broker answers
with the current assignment. A join that is merely slow is not disturbed:
the flag only makes the next poll wait for the same task.

It reads kafka-python's private coordinator (``consumer._coordinator``), as
:func:`.liveness.rebalancing` does. Both go through :func:`coordinator`,
which hands the coordinator out only on the kafka-python minor version they
were written and tested on (:data:`TESTED_MINOR`, the version pyproject.toml
pins); on any other version it logs once and both do nothing (the guard
skipped, the rebalance watch reading "not rebalancing"). tests/test_group_join.py
fails when the guard stops working, when the race it guards against is no
longer reached, and when the pin and :data:`TESTED_MINOR` disagree.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["keep_join_going", "coordinator", "guard_description", "TESTED_MINOR"]

log = logging.getLogger("ragpulse.collect")

TESTED_MINOR = "3.0"  # pyproject.toml pins kafka-python to this minor version
_checked: dict[str, bool] = {}


def _installed_version() -> str:
    try:
        import kafka
    except ImportError:
        return "not installed"
    return str(getattr(kafka, "__version__", "unknown"))


def guard_applies(version: str | None = None) -> bool:
    """True when kafka-python ``version`` (default: the installed one) is the tested minor."""
    version = _installed_version() if version is None else version
    return version.split(".")[:2] == TESTED_MINOR.split(".")


def guard_description() -> str:
    """For the start-up log: whether the guard and the rebalance watch are active."""
    version = _installed_version()
    if guard_applies(version):
        return f"active (kafka-python {version})"
    return f"skipped: kafka-python {version} is not the tested {TESTED_MINOR}.x"


def coordinator(consumer: Any) -> Any | None:
    """kafka-python's private group coordinator of ``consumer``, or None when this
    kafka-python is not the tested minor version (logged once) or has no such attribute."""
    if "applies" not in _checked:
        _checked["applies"] = guard_applies()
        if not _checked["applies"]:
            log.warning("group-join guard and rebalance watch %s", guard_description())
    if not _checked["applies"]:
        return None
    return getattr(consumer, "_coordinator", None)


def keep_join_going(consumer: Any) -> bool:
    """After a poll: make sure a rebalancing consumer's next poll completes its join.

    Returns True when it had to set the rejoin flag (the member was rebalancing with
    nothing asking for the join to finish), False otherwise. Never raises.
    """
    coord = coordinator(consumer)
    if coord is None:
        return False
    from kafka.structs import MemberState

    if getattr(coord, "state", None) != MemberState.REBALANCING:
        return False
    if getattr(coord, "rejoin_needed", True):
        return False
    request = getattr(coord, "request_rejoin", None)
    if request is None:
        return False
    request()
    return True
