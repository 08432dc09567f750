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
:func:`ragpulse.collector.liveness.rebalancing` does; any other shape is left
alone.
"""

from __future__ import annotations

from typing import Any

__all__ = ["keep_join_going"]


def keep_join_going(consumer: Any) -> bool:
    """After a poll: make sure a rebalancing consumer's next poll completes its join.

    Returns True when it had to set the rejoin flag (the member was rebalancing with
    nothing asking for the join to finish), False otherwise. Never raises.
    """
    try:
        from kafka.structs import MemberState
    except ImportError:  # another kafka-python: nothing to keep going
        return False
    coordinator = getattr(consumer, "_coordinator", None)
    if coordinator is None or getattr(coordinator, "state", None) != MemberState.REBALANCING:
        return False
    if getattr(coordinator, "rejoin_needed", True):
        return False
    request = getattr(coordinator, "request_rejoin", None)
    if request is None:
        return False
    request()
    return True
