"""Health of the process, for ``/healthz`` (alive) and ``/readyz`` (ready for traffic).

``/healthz`` fails (503) while a loop's Kafka poll has been running longer
than the stall limit, or its consumer group join has lasted longer than the
join may legitimately take plus that limit (:class:`PollWatch`, filled in by
every polling loop); a liveness probe then restarts the process, which loses
nothing because offsets are committed only after storage. ``/readyz``
answers the owner's readiness check (the Kafka loop: running with partitions
assigned). Metrics are served beside these on the same port but are not part
of the answer.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.poll_watch import PollWatch

__all__ = ["Health", "DEFAULT_STALL_S"]

DEFAULT_STALL_S = 120.0  # well above a rebalance (session timeouts are seconds)


class Health:
    """The answers of ``/healthz`` and ``/readyz`` as (HTTP status, body)."""

    def __init__(
        self, polls: PollWatch, ready: Callable[[], bool] | None = None, stall_s: float = DEFAULT_STALL_S
    ) -> None:
        self.polls = polls
        self.ready = ready or (lambda: True)
        self.stall_s = stall_s

    def healthz(self) -> tuple[int, bytes]:
        stuck = self.polls.stuck(self.stall_s)
        if not stuck:
            return 200, b"ok\n"
        text = ", ".join(f"{n} stuck for {s:.0f}s" for n, s in sorted(stuck.items()))
        return 503, f"stalled: {text}\n".encode()

    def readyz(self) -> tuple[int, bytes]:
        try:
            ok = bool(self.ready())
        except Exception:  # noqa: BLE001 - not ready is the answer
            ok = False
        return (200, b"ready\n") if ok else (503, b"not ready\n")
