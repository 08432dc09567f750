"""The *Quality overview* dashboard (Prometheus): SLIs and burn rates, verdicts, volume, judge, pipeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .common import QUALITY_UID
from .dashboard_sessions import session_panels
from .dashboard_variants import variant_panels, variant_var
from .grafana import PROM, Layout, dashboard, datasource_var, panel, prom_target, query_var
from .pipeline_rules import negative_feedback
from .rules import BUDGET, burn_threshold, error_ratio

__all__ = ["quality_overview"]

_SEL = 'service=~"$service", judge=~"$judge"'
_SVC = 'service=~"$service"'


def _rate(metric: str, sel: str = _SEL, by: str = "") -> str:
    grouping = f" by ({by})" if by else ""
    return f"sum{grouping} (rate({metric}{{{sel}}}[$__rate_interval]))"


def _limit_line(ref: str, color: str) -> dict[str, Any]:
    """Field override drawing target ``ref`` as a dashed line in ``color`` (an objective's limit)."""
    return {
        "matcher": {"id": "byFrameRefID", "options": ref},
        "properties": [
            {"id": "color", "value": {"mode": "fixed", "fixedColor": color}},
            {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
        ],
    }


def _sli_panels(config: Mapping[str, Any], lay: Layout) -> list[dict[str, Any]]:
    """One panel per objective: its error ratios and, as dashed lines, the recorded budget and page line.

    The limits are queried (``ragpulse:sli_error_budget``), not written into the dashboard, so a
    deployment that sets other objectives (the helm chart's ``objectives`` values) draws its own.
    """
    fast = next(bw for bw in config["burn_windows"] if bw["name"] == "page-fast")
    out = [lay.row("Quality objectives (error ratio per SLI; dashed: error budget and fast-burn page)")]
    for name, obj in config["objectives"].items():
        sel = f'{{objective="{name}", {_SEL}}}'
        targets = [
            prom_target(f"{error_ratio(fast['short'])}{sel}", f"{fast['short']} {{{{service}}}}", "A"),
            prom_target(f"{error_ratio(fast['long'])}{sel}", f"{fast['long']} {{{{service}}}}", "B"),
            prom_target(f'{BUDGET}{{objective="{name}"}}', "error budget", "C"),
            prom_target(burn_threshold(name, fast["factor"]), f"fast-burn page ({fast['factor']}x)", "D"),
        ]
        out.append(
            panel(lay, obj["title"], targets, w=6, unit="percentunit", description=obj["description"],
                  overrides=[_limit_line("C", "orange"), _limit_line("D", "red")])
        )  # fmt: skip
    burn = f"{error_ratio(fast['long'])}{{{_SEL}}}\n  / on (objective) group_left {BUDGET}"
    out.append(
        panel(lay, f"Burn rate over {fast['long']} (1 = spending the budget exactly)", [prom_target(burn, "{{objective}} {{service}}")],
              w=12, unit="x", thresholds=[("orange", 1), ("red", float(fast["factor"]))])
    )  # fmt: skip
    return out


def _verdict_panels(lay: Layout) -> list[dict[str, Any]]:
    return [
        lay.row("Judgments"),
        panel(lay, "Failure modes", [prom_target(_rate("ragpulse_failure_modes_total", by="mode"), "{{mode}}")],
              unit="reqps", description="Judged traces by failure mode (retrieval: bad context; generation: unfaithful answer)"),
        panel(lay, "Abstentions by kind", [prom_target(_rate("ragpulse_abstentions_total", by="kind"), "{{kind}}")], unit="reqps"),
        panel(lay, "Claim verdicts", [prom_target(_rate("ragpulse_claims_total", by="verdict"), "{{verdict}}")], unit="reqps"),
        panel(lay, "Claim citations", [prom_target(_rate("ragpulse_claim_citations_total", by="citation"), "{{citation}}")], unit="reqps"),
        panel(lay, "Unsupported claims by source", [prom_target(_rate("ragpulse_unsupported_claims_total", by="source"), "{{source}}")],
              unit="reqps", description="hallucination: in no chunk; noise: copied from a retrieved chunk"),
        panel(lay, "Mean faithfulness", [prom_target(
            f"{_rate('ragpulse_faithfulness_sum', by='service')}\n  / {_rate('ragpulse_faithfulness_count', by='service')}", "{{service}}")],
            unit="percentunit"),
    ]  # fmt: skip


def _volume_panels(lay: Layout) -> list[dict[str, Any]]:
    return [
        lay.row("Volume and judge"),
        panel(lay, "Traces received and judged", [
            prom_target(_rate("ragpulse_traces_received_total", _SVC, "service"), "received {{service}}", "A"),
            prom_target(_rate("ragpulse_traces_judged_total", by="service"), "judged {{service}}", "B")], unit="reqps"),
        panel(lay, "Sampling decisions by reason", [prom_target(
            'sum by (reason) (rate(ragpulse_traces_sampled_total{sampled="1"}[$__rate_interval]))', "{{reason}}")], unit="reqps"),
        panel(lay, "Judge latency p95", [prom_target(
            f"histogram_quantile(0.95, {_rate('ragpulse_judge_latency_seconds_bucket', by='judge, le')})", "{{judge}}")], unit="s"),
        panel(lay, "Judge cost per hour", [prom_target(f"3600 * {_rate('ragpulse_judge_cost_usd_total', by='judge')}", "{{judge}}")],
              unit="currencyUSD"),
        panel(lay, "Judge errors", [prom_target(_rate("ragpulse_judge_errors_total", by="judge"), "{{judge}}")], unit="reqps"),
        panel(lay, "Judge paused by its cost budget", [prom_target(
            'sum by (judge) (rate(ragpulse_judge_budget_paused_seconds_total{judge=~"$judge"}[$__rate_interval]))', "{{judge}}")],
            unit="percentunit"),
    ]  # fmt: skip


def _feedback_panels(config: Mapping[str, Any], lay: Layout) -> list[dict[str, Any]]:
    """The users' verdict: negative feedback per received trace (the alert's ratio) and all feedback."""
    nf = config["pipeline"]["negative_feedback"]
    ratio = (
        f"sum by (service) (rate({negative_feedback(_SVC)}[{nf['window']}]))\n"
        f"  / sum by (service) (rate(ragpulse_traces_received_total{{{_SVC}}}[{nf['window']}]))"
    )
    return [
        lay.row("User feedback"),
        panel(lay, f"Negative feedback per received trace ({nf['window']})", [prom_target(ratio, "{{service}}")],
              w=12, unit="percentunit", thresholds=[("red", float(nf["max_ratio"]))],
              description="Thumbs-down, escalations, imported tickets and re-asks with a negative label, per trace received"),
        panel(lay, "Feedback by kind and label", [prom_target(_rate("ragpulse_feedback_total", _SVC, "kind, label"), "{{kind}} {{label}}")],
              w=12, unit="reqps"),
    ]  # fmt: skip


def _pipeline_panels(config: Mapping[str, Any], lay: Layout) -> list[dict[str, Any]]:
    p = config["pipeline"]
    lag_q = float(p["pipeline_lag"]["quantile"])
    return [
        lay.row("Pipeline health"),
        panel(lay, f"Pipeline lag p{lag_q * 100:g} (span end to judgment)", [prom_target(
            f"histogram_quantile({lag_q:g}, {_rate('ragpulse_pipeline_lag_seconds_bucket', _SVC, 'service, le')})", "{{service}}")],
            unit="s", thresholds=[("red", float(p["pipeline_lag"]["max_seconds"]))]),
        panel(lay, "Consumer lag", [prom_target("sum by (topic) (ragpulse_consumer_lag)", "{{topic}}")], unit="short",
              thresholds=[("red", float(p["consumer_lag"]["max_records"]))]),
        panel(lay, "Dead-lettered records", [prom_target(
            "sum by (kind) (increase(ragpulse_deadlettered_total[$__rate_interval]))", "{{kind}}")], unit="short"),
        panel(lay, "Storage up", [prom_target("min by (instance) (ragpulse_storage_up)", "{{instance}}")], kind="stat", w=6,
              thresholds=[("red", 0), ("green", 1)]),
        panel(lay, "Collector up", [prom_target(f"up{{{config['collector_selector']}}}", "{{instance}}")], kind="stat", w=6,
              thresholds=[("red", 0), ("green", 1)]),
    ]  # fmt: skip


def quality_overview(config: Mapping[str, Any]) -> dict[str, Any]:
    lay = Layout()
    panels = (
        _sli_panels(config, lay)
        + _verdict_panels(lay)
        + variant_panels(lay)
        + _volume_panels(lay)
        + _feedback_panels(config, lay)
        + session_panels(lay)
        + _pipeline_panels(config, lay)
    )
    variables = [
        datasource_var("datasource", "prometheus", "Prometheus"),
        query_var("service", PROM, "label_values(ragpulse_traces_received_total, service)"),
        query_var("judge", PROM, 'label_values(ragpulse_traces_judged_total{service=~"$service"}, judge)'),
        variant_var(),
    ]
    return dashboard(
        QUALITY_UID,
        "ragpulse quality overview",
        "Answer-quality SLIs and their burn rates, judgments, variants, volume, judge health, user feedback, "
        "sessions and pipeline health.",
        variables,
        panels,
    )
