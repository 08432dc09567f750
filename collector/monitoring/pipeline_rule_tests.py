"""promtool test cases of the pipeline-health alerts (see :mod:`.rule_tests`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .pipeline_rules import PIPELINE_ALERTS
from .promtool_cases import JUDGE, SCRAPE, SERVICE, Case, Expect, counter, gauge, series

__all__ = ["pipeline_cases"]

_CRIT, _WARN = {"severity": "critical"}, {"severity": "warning"}


def _up(*segments: tuple[float | None, int]) -> tuple[str, str]:
    return series("up", SCRAPE), gauge(*segments)


def _received(*segments: tuple[float, int]) -> tuple[str, str]:
    return series(
        "ragpulse_traces_received_total", {"service": SERVICE, "source": "ragpulse", **SCRAPE}
    ), counter(*segments)


def _per_judge(metric: str, *segments: tuple[float, int]) -> tuple[str, str]:
    return series(metric, {"service": SERVICE, "judge": JUDGE, **SCRAPE}), counter(*segments)


def _collector_cases(a: str) -> list[Case]:
    kept = dict(SCRAPE)
    return [
        Case(f"{a} fires", "1m", [_up((1, 3), (0, 20))], [("10m", a, [Expect(_CRIT, kept)])]),
        Case(f"{a} healthy", "1m", [_up((1, 30))], [("10m", a, [])]),
        Case(
            f"{a} resolves", "1m", [_up((0, 10), (1, 20))], [("7m", a, [Expect(_CRIT, kept)]), ("15m", a, [])]
        ),
    ]


def _no_traces_cases(a: str) -> list[Case]:
    svc = {"service": SERVICE}
    return [
        Case(f"{a} fires when a service stops sending", "1m", [_up((1, 80)), _received((10, 20), (0, 50))],
             [("55m", a, [Expect(_WARN, svc, 0)])]),
        Case(f"{a} fires when the collector never received a trace", "1m", [_up((1, 30))],
             [("20m", a, [Expect(_WARN, {"job": SCRAPE["job"]}, 1)])]),
        Case(f"{a} healthy", "1m", [_up((1, 80)), _received((10, 70))], [("55m", a, [])]),
        Case(f"{a} resolves when traffic resumes", "1m", [_up((1, 80)), _received((10, 20), (0, 40), (10, 20))],
             [("55m", a, [Expect(_WARN, svc, 0)]), ("75m", a, [])]),
    ]  # fmt: skip


def _stalled_cases(a: str) -> list[Case]:
    judged = "ragpulse_traces_judged_total"
    svc = {"service": SERVICE}
    return [
        Case(f"{a} fires", "1m", [_received((10, 60))], [("45m", a, [Expect(_CRIT, svc)])]),
        Case(f"{a} healthy", "1m", [_received((10, 60)), _per_judge(judged, (1, 60))], [("45m", a, [])]),
        Case(f"{a} volume guard", "1m", [_received((1, 60))], [("45m", a, [])]),
        Case(f"{a} resolves", "1m",
             [_received((10, 70)), (series(judged, {"service": SERVICE, "judge": JUDGE, **SCRAPE}), gauge((None, 40)) + " 1+1x30")],
             [("38m", a, [Expect(_CRIT, svc)]), ("50m", a, [])]),
    ]  # fmt: skip


def _judge_error_cases(a: str) -> list[Case]:
    judged, errors = "ragpulse_traces_judged_total", "ragpulse_judge_errors_total"
    q = {"service": SERVICE, "judge": JUDGE}
    return [
        Case(f"{a} fires", "1m", [_per_judge(judged, (10, 60)), _per_judge(errors, (2, 60))],
             [("30m", a, [Expect(_WARN, q, 0.2)])]),
        Case(f"{a} healthy", "1m", [_per_judge(judged, (10, 60)), _per_judge(errors, (0.1, 60))], [("30m", a, [])]),
        Case(f"{a} volume guard", "1m", [_per_judge(judged, (1, 60)), _per_judge(errors, (0.5, 60))],
             [("30m", a, [])]),
        Case(f"{a} resolves", "1m", [_per_judge(judged, (10, 60)), _per_judge(errors, (2, 30), (0, 30))],
             [("25m", a, [Expect(_WARN, q, 0.2)]), ("50m", a, [])]),
    ]  # fmt: skip


def _budget_cases(a: str) -> list[Case]:
    def paused(*segs: tuple[float, int]) -> tuple[str, str]:
        return series("ragpulse_judge_budget_paused_seconds_total", {"judge": JUDGE, **SCRAPE}), counter(
            *segs
        )

    j = {"judge": JUDGE}
    return [
        Case(f"{a} fires", "1m", [paused((45, 60))], [("30m", a, [Expect(_WARN, j, 0.75)])]),
        Case(f"{a} healthy", "1m", [paused((10, 60))], [("30m", a, [])]),
        Case(f"{a} resolves", "1m", [paused((45, 40), (0, 30))], [("35m", a, [Expect(_WARN, j, 0.75)]), ("60m", a, [])]),
    ]  # fmt: skip


def _consumer_lag_cases(a: str, limit: int) -> list[Case]:
    def lag(*segs: tuple[float, int], topic: str = "ragpulse.spans", partition: str = "0") -> tuple[str, str]:
        return series("ragpulse_consumer_lag", {"topic": topic, "partition": partition, **SCRAPE}), gauge(
            *segs
        )

    t, j = {"topic": "ragpulse.spans"}, {"topic": "ragpulse.judge"}
    high = 2 * limit
    # The judge workers report the judge topic's lag: each topic alerts on its own, its partitions summed.
    judge_behind = [
        lag((limit * 3 // 4, 30), topic="ragpulse.judge"),
        lag((limit * 3 // 4, 30), topic="ragpulse.judge", partition="1"),
        lag((limit // 20, 30)),
    ]
    return [
        Case(f"{a} fires", "1m", [lag((high, 30))], [("15m", a, [Expect(_WARN, t, high)])]),
        Case(f"{a} healthy", "1m", [lag((limit // 20, 30))], [("15m", a, [])]),
        Case(f"{a} resolves", "1m", [lag((high, 20), (100, 20))], [("15m", a, [Expect(_WARN, t, high)]), ("30m", a, [])]),
        Case(f"{a} fires for the judge topic", "1m", judge_behind, [("15m", a, [Expect(_WARN, j, limit * 3 // 2)])]),
    ]  # fmt: skip


def _pipeline_lag_cases(a: str) -> list[Case]:
    """Observations above 600 s (p95 = the 600 s bucket bound) or below 60 s, 10 a minute."""

    def hist(slow: list[tuple[float, int]], fast: list[tuple[float, int]]) -> list[tuple[str, str]]:
        base = {"service": SERVICE, **SCRAPE}
        both = [(s + f, k) for (s, k), (f, _) in zip(slow, fast, strict=True)]
        out = [
            (series("ragpulse_pipeline_lag_seconds_bucket", {**base, "le": le}), counter(*fast))
            for le in ("60", "300", "600")
        ]
        out.append((series("ragpulse_pipeline_lag_seconds_bucket", {**base, "le": "+Inf"}), counter(*both)))
        out.append((series("ragpulse_pipeline_lag_seconds_count", base), counter(*both)))
        return out

    svc = {"service": SERVICE}
    return [
        Case(f"{a} fires", "1m", hist([(10, 60)], [(0, 60)]), [("30m", a, [Expect(_WARN, svc, 600)])]),
        Case(f"{a} healthy", "1m", hist([(0, 60)], [(10, 60)]), [("30m", a, [])]),
        Case(f"{a} volume guard", "1m", hist([(1, 60)], [(0, 60)]), [("30m", a, [])]),
        Case(f"{a} resolves", "1m", hist([(10, 30), (0, 30)], [(0, 30), (10, 30)]),
             [("25m", a, [Expect(_WARN, svc, 600)]), ("50m", a, [])]),
    ]  # fmt: skip


def _dead_letter_cases(a: str) -> list[Case]:
    def dl(values: str) -> tuple[str, str]:
        return series("ragpulse_deadlettered_total", {"kind": "bad_record", **SCRAPE}), values

    k = {"kind": "bad_record"}
    return [
        Case(f"{a} fires", "1m", [dl(gauge((0, 5), (1, 30)))], [("10m", a, [Expect(_WARN, k)])]),
        Case(f"{a} healthy", "1m", [dl(gauge((0, 35)))], [("10m", a, [])]),
        Case(f"{a} resolves", "1m", [dl(gauge((0, 5), (1, 40)))], [("10m", a, [Expect(_WARN, k)]), ("30m", a, [])]),
    ]  # fmt: skip


def _storage_cases(a: str) -> list[Case]:
    def up(*segs: tuple[float, int]) -> tuple[str, str]:
        return series("ragpulse_storage_up", SCRAPE), gauge(*segs)

    kept = dict(SCRAPE)
    return [
        Case(f"{a} fires", "1m", [up((1, 2), (0, 20))], [("10m", a, [Expect(_CRIT, kept)])]),
        Case(f"{a} healthy", "1m", [up((1, 30))], [("10m", a, [])]),
        Case(f"{a} resolves", "1m", [up((0, 10), (1, 10))], [("5m", a, [Expect(_CRIT, kept)]), ("15m", a, [])]),
    ]  # fmt: skip


def _negative_feedback_cases(a: str, window: str) -> list[Case]:
    """10 traces a minute; negative feedback on 1 a minute (10%: thumbs-down plus escalations, whose
    label is matched in any case) or on 0.2 (2%, healthy); positive feedback never counts."""

    def feedback(kind: str, label: str, *segs: tuple[float, int]) -> tuple[str, str]:
        labels = {"service": SERVICE, "kind": kind, "label": label, **SCRAPE}
        return series("ragpulse_feedback_total", labels), counter(*segs)

    rule = {**_WARN, "window": window}
    svc = {"service": SERVICE}
    happy = feedback("thumbs", "positive", (3, 120))
    return [
        Case(f"{a} fires", "1m",
             [_received((10, 90)), feedback("thumbs", "negative", (0.5, 90)), feedback("escalation", "Escalated", (0.5, 90)), happy],
             [("60m", a, [Expect(rule, svc, 0.1)])]),
        Case(f"{a} healthy", "1m", [_received((10, 90)), feedback("thumbs", "negative", (0.2, 90)), happy], [("60m", a, [])]),
        Case(f"{a} volume guard", "1m", [_received((1, 90)), feedback("thumbs", "negative", (0.5, 90))], [("60m", a, [])]),
        Case(f"{a} resolves", "1m", [_received((10, 120)), feedback("reask", "negative", (1, 30), (0, 90)), happy],
             [("25m", a, [Expect(rule, svc, 0.1)]), ("100m", a, [])]),
    ]  # fmt: skip


def pipeline_cases(config: Mapping[str, Any]) -> list[Case]:
    """Every pipeline alert's cases; the inputs are sized to the config's thresholds."""
    a = PIPELINE_ALERTS
    return [
        *_collector_cases(a["collector_down"]),
        *_no_traces_cases(a["no_traces"]),
        *_stalled_cases(a["judging_stalled"]),
        *_judge_error_cases(a["judge_errors"]),
        *_budget_cases(a["judge_budget_paused"]),
        *_consumer_lag_cases(a["consumer_lag"], int(config["pipeline"]["consumer_lag"]["max_records"])),
        *_pipeline_lag_cases(a["pipeline_lag"]),
        *_dead_letter_cases(a["dead_letters"]),
        *_storage_cases(a["storage_down"]),
        *_negative_feedback_cases(a["negative_feedback"], config["pipeline"]["negative_feedback"]["window"]),
    ]
