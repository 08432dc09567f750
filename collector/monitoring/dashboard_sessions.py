"""The *Sessions* row of the quality overview, and the drill-down's table of sessions with flagged turns.

The session series (collector/sessions/metrics.py) are read from the store, so every replica
serving ``/metrics`` counts the same sessions: each expression takes ``max`` over replicas
(by service) before summing or dividing. A session counts once it has ended (no turn within
the re-ask window after its last one), so these panels trail live traffic by that window.
"""

from __future__ import annotations

from typing import Any

from .grafana import Layout, panel, prom_target

__all__ = ["SESSIONS_FLAGGED", "session_panels"]

_SVC = 'service=~"$service"'
_SHARE_WINDOW = "1h"  # sessions end a few a minute: shares over an hour, not a scrape interval


def _per_service(metric: str, window: str, sel: str = _SVC, by: str = "service") -> str:
    """The metric's rate per service (and ``by``), the max over replicas reading one store."""
    return f"max by ({by}) (rate({metric}{{{sel}}}[{window}]))"


def session_panels(lay: Layout) -> list[dict[str, Any]]:
    """Active sessions, turns per session, the share of turns flagged and what followed a flagged turn."""
    w = _SHARE_WINDOW
    flagged = (
        f"sum by (service) ({_per_service('ragpulse_session_flagged_turns_total', w, by='service, then')})"
    )
    ended = _per_service("ragpulse_session_turns_count", w)
    quantile = _per_service("ragpulse_session_turns_bucket", w, by="service, le")
    abandoned = _per_service("ragpulse_session_flagged_turns_total", w, f'then="abandoned", {_SVC}')
    return [
        lay.row("Sessions (conversations by session.id; a session counts once it has ended)"),
        panel(lay, "Active sessions", [prom_target(f"max by (service) (ragpulse_sessions_active{{{_SVC}}})", "{{service}}")],
              w=6, description="Sessions with a turn within the re-ask window (feedback.reask.window_s)"),
        panel(lay, f"Turns per session (ended, {w})", [
            prom_target(f"histogram_quantile(0.5, {quantile})", "p50 {{service}}", "A"),
            prom_target(f"histogram_quantile(0.9, {quantile})", "p90 {{service}}", "B")], w=6),
        panel(lay, f"Share of judged turns flagged ({w})", [prom_target(
            f"{flagged}\n  / {_per_service('ragpulse_session_judged_turns_total', w)}", "{{service}}")],
            w=6, unit="percentunit",
            description="Flagged: failure mode retrieval, generation or both, or a false refusal (the export's criteria)"),
        panel(lay, f"Sessions with a flagged turn ({w})", [prom_target(
            f"{_per_service('ragpulse_sessions_flagged_total', w)}\n  / {ended}", "{{service}}")],
            w=6, unit="percentunit", description="Ended sessions with at least one flagged turn, per ended session"),
        panel(lay, "Flagged turns by what followed", [prom_target(
            f"sum by (then) ({_per_service('ragpulse_session_flagged_turns_total', '$__rate_interval', by='service, then')})",
            "{{then}}")], w=12, unit="reqps",
            description="reasked: the user asked again; abandoned: the session's last turn; continued: another question"),
        panel(lay, f"Sessions abandoned on a flagged turn ({w})", [prom_target(f"{abandoned}\n  / {ended}", "{{service}}")],
              w=12, unit="percentunit",
              description="Ended sessions whose last turn was flagged and not re-asked, per ended session"),
    ]  # fmt: skip


SESSIONS_FLAGGED = """SELECT s.session_id AS session_id, s.turns AS turns, s.judged_turns AS judged_turns,
  s.flagged_turns AS flagged_turns, s.flagged_reasked AS reasked_after_flagged,
  s.last_turn_flagged AS ended_on_flagged, s.first_time AS first_turn, s.last_time AS last_turn,
  t.trace_id AS trace_id
FROM (
  SELECT * FROM ${database}.rag_sessions
  WHERE service = '${service}' AND flagged_turns > 0 AND session_id IN
    (SELECT session_id FROM ${database}.rag_traces WHERE service = '${service}' AND session_id != '' AND $__timeFilter(time))
) AS s
LEFT JOIN (
  SELECT session_id, argMaxIf(trace_id, time, flagged) AS trace_id FROM ${database}.rag_session_turns
  WHERE service = '${service}' AND $__timeFilter(time) GROUP BY session_id
) AS t ON t.session_id = s.session_id
ORDER BY s.flagged_turns DESC, s.last_time DESC
LIMIT 50"""
