"""Per-session figures on the collector's ``/metrics``, read from the store when Prometheus scrapes.

A session's figures exist only once it has ended (no turn within the re-ask window after its
last one) and its turns are judged, which no single trace's arrival tells: a judge may run in
another process, a re-ask arrives with a later trace. So the figures are read from the store
(``rag_sessions``, :mod:`.store`), and counted once per session as its end passes:

- ``ragpulse_session_turns{service}``: histogram of turns per ended session (``_count``: sessions
  ended, ``_sum``: their turns);
- ``ragpulse_session_judged_turns_total{service}``: judged turns of ended sessions;
- ``ragpulse_session_flagged_turns_total{service, then}``: flagged turns of ended sessions by what
  followed each (``reasked``, ``abandoned``, ``continued``), so flagged / judged is the share of
  turns flagged and ``then`` says how users reacted;
- ``ragpulse_sessions_flagged_total{service}``: ended sessions with at least one flagged turn;
- ``ragpulse_sessions_active{service}``: sessions with a turn within the re-ask window (gauge).

Labels are the service (and ``then``) alone: never a session id. Counting: at most once per
``refresh_s`` a read takes the sessions whose last turn fell in ``[watermark, hi)``, with ``hi``
the window plus ``settle_s`` before now (``settle_s`` leaves late spans and judgments time to be
stored), adds them and moves the watermark to ``hi``; so each session is counted once, when it
has ended, and the counters start at 0 with the process (sessions that ended before it started
are not counted). Every replica reading one store counts the same sessions: dashboards take
``max`` over replicas. A service with an active session shows zero-valued counters from that
read on. Each read queries a bounded time range (the window, and the sessions that ended since
the last read), never the whole table. A failed read leaves the session families out of that
scrape and retries on the next.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

from ..core.throttled_read import StoreCollector
from ..storage.clickhouse import Storage
from .store import FOLLOWED_BY, SessionFigures, SessionStore

__all__ = ["TURN_BUCKETS", "SessionCounts", "StoreSessionMetrics", "register_session_metrics"]

#: Upper bounds of the turns-per-session histogram (+Inf added).
TURN_BUCKETS = (1, 2, 3, 5, 8, 13, 20, 50)
_NS = 1_000_000_000


class SessionCounts:
    """The counters of one service, added to as its sessions end."""

    def __init__(self) -> None:
        self.buckets = [0] * (len(TURN_BUCKETS) + 1)  # per bucket (not cumulative); the last is +Inf
        self.sessions = 0
        self.turns = 0
        self.judged = 0
        self.flagged_sessions = 0
        self.followed = dict.fromkeys(FOLLOWED_BY, 0)

    def add(self, s: SessionFigures) -> None:
        """Count one ended session."""
        self.buckets[next((k for k, b in enumerate(TURN_BUCKETS) if s.turns <= b), len(TURN_BUCKETS))] += 1
        self.sessions += 1
        self.turns += s.turns
        self.judged += s.judged_turns
        self.flagged_sessions += int(s.flagged_turns > 0)
        for then, n in s.followed_by().items():
            self.followed[then] += n

    def cumulative(self) -> list[tuple[str, float]]:
        """The histogram's buckets as Prometheus wants them: (le, cumulative count)."""
        out, total = [], 0
        for le, n in zip([*map(floatToGoString, TURN_BUCKETS), "+Inf"], self.buckets, strict=True):
            total += n
            out.append((le, float(total)))
        return out


class StoreSessionMetrics(StoreCollector):
    """A prometheus-client collector of the session families, read through ``store``."""

    def __init__(
        self,
        store: SessionStore,
        window_s: float = 300.0,
        settle_s: float = 300.0,
        refresh_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``clock``: wall-clock seconds (trace times are wall-clock); injectable for tests."""
        self.store = store
        self.window_ns = int(float(window_s) * _NS)
        self.settle_ns = int(float(settle_s) * _NS)
        self.clock = clock
        self.counts: dict[str, SessionCounts] = {}
        self.active: dict[str, int] = {}
        self.watermark = self._horizon()
        super().__init__("session metrics", refresh_s)

    def _horizon(self) -> int:
        """Now less the window and the settling time: sessions whose last turn is before it ended."""
        return int(self.clock() * _NS) - self.window_ns - self.settle_ns

    def _read(self) -> bool:
        hi = self._horizon()
        ended = self.store.ended(self.watermark, hi) if hi > self.watermark else []
        active = self.store.active(int(self.clock() * _NS) - self.window_ns)
        for s in ended:
            self.counts.setdefault(s.service, SessionCounts()).add(s)
        for service in active:  # a service with live sessions shows its counters from 0
            self.counts.setdefault(service, SessionCounts())
        self.watermark = max(self.watermark, hi)
        self.active = {svc: active.get(svc, 0) for svc in self.counts}
        return True

    def refresh(self) -> bool:
        """Read the store when the last read is older than ``refresh_s``; False when reading failed."""
        return bool(self.latest())

    def collect(self) -> Iterator[Metric]:
        if not self.refresh():
            return
        yield from session_families(self.counts, self.active)


def session_families(counts: Mapping[str, SessionCounts], active: Mapping[str, int]) -> Iterator[Metric]:
    """The session metric families of ``counts`` and ``active`` (by service)."""
    turns = HistogramMetricFamily(
        "ragpulse_session_turns", "Turns per ended session (no turn within the re-ask window after the last)",
        labels=["service"],
    )  # fmt: skip
    judged = CounterMetricFamily(
        "ragpulse_session_judged_turns", "Judged turns of ended sessions", labels=["service"]
    )
    flagged = CounterMetricFamily(
        "ragpulse_session_flagged_turns",
        "Flagged turns of ended sessions (failure mode retrieval/generation/both, or a false refusal), "
        "by what followed: reasked, abandoned (the session's last turn), continued",
        labels=["service", "then"],
    )
    sessions = CounterMetricFamily(
        "ragpulse_sessions_flagged", "Ended sessions with at least one flagged turn", labels=["service"]
    )
    live = GaugeMetricFamily(
        "ragpulse_sessions_active", "Sessions with a turn within the re-ask window", labels=["service"]
    )
    for service in sorted(counts):
        c = counts[service]
        turns.add_metric([service], c.cumulative(), float(c.turns))
        judged.add_metric([service], float(c.judged))
        for then in FOLLOWED_BY:
            flagged.add_metric([service, then], float(c.followed[then]))
        sessions.add_metric([service], float(c.flagged_sessions))
        live.add_metric([service], float(active.get(service, 0)))
    yield from (turns, judged, flagged, sessions, live)


def register_session_metrics(
    registry: CollectorRegistry,
    storage: Storage,
    settings: Mapping[str, Any],
    reask: Mapping[str, Any] | None = None,
) -> StoreSessionMetrics | None:
    """Serve the session metrics from ``storage`` on ``registry``: the collector config's
    ``session_metrics`` section (``enabled``, ``refresh_s``, ``settle_s``) and the re-ask
    window of ``feedback.reask`` (``reask``); None when off."""
    if not settings.get("enabled", True):
        return None
    metrics = StoreSessionMetrics(
        SessionStore(storage),
        window_s=float((reask or {}).get("window_s", 300)),
        settle_s=float(settings.get("settle_s", 300.0)),
        refresh_s=float(settings.get("refresh_s", 30.0)),
    )
    registry.register(metrics)
    return metrics
