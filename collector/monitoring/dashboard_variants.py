"""The *Variants* row of the quality overview: quality, cost per query and latency per ``variant``.

Each panel selects ``variant=~"$variant"`` (the dashboard's variant variable,
the bounded label of :mod:`ragpulse.collector.core.variants`) and draws one
line per variant, so two arms of an A/B test sit side by side; the statistics
with intervals and verdicts are ``ragpulse compare``'s (docs/compare.md).
"""

from __future__ import annotations

from typing import Any

from .grafana import PROM, Layout, panel, prom_target, query_var

__all__ = ["variant_panels", "variant_var"]

_SEL = 'service=~"$service", judge=~"$judge", variant=~"$variant"'
_SVC = 'service=~"$service", variant=~"$variant"'


def _rate(metric: str, sel: str, extra: str = "", by: str = "variant") -> str:
    inner = f"{extra}, {sel}" if extra else sel
    return f"sum by ({by}) (rate({metric}{{{inner}}}[$__rate_interval]))"


def variant_var() -> dict[str, Any]:
    """The dashboard variable listing the variants the judged traces carry."""
    return query_var(
        "variant", PROM, 'label_values(ragpulse_failure_modes_total{service=~"$service"}, variant)'
    )


def variant_panels(lay: Layout) -> list[dict[str, Any]]:
    bad = 'verdict=~"unsupported|contradicted"'
    gen = 'mode=~"generation|both"'
    return [
        lay.row("Variants (rag.variant; ragpulse compare gives intervals and verdicts)"),
        panel(lay, "Unsupported-claim ratio by variant", [prom_target(
            f"{_rate('ragpulse_claims_total', _SEL, bad)}\n  / {_rate('ragpulse_claims_total', _SEL)}", "{{variant}}")],
            unit="percentunit", description="Judged claims the chunks do not support, per variant (RagpulseVariantRegression)"),
        panel(lay, "Mean faithfulness by variant", [prom_target(
            f"{_rate('ragpulse_faithfulness_sum', _SEL)}\n  / {_rate('ragpulse_faithfulness_count', _SEL)}", "{{variant}}")],
            unit="percentunit"),
        panel(lay, "Generation-failure share by variant", [prom_target(
            f"{_rate('ragpulse_failure_modes_total', _SEL, gen)}\n"
            f"  / {_rate('ragpulse_failure_modes_total', _SEL)}", "{{variant}}")], unit="percentunit"),
        panel(lay, "Cost per query by variant", [prom_target(
            f"{_rate('ragpulse_generation_cost_usd_total', _SVC)}\n  / {_rate('ragpulse_generation_priced_total', _SVC)}",
            "{{variant}}")], unit="currencyUSD", description="Generation cost of the priced traces / priced traces"),
        panel(lay, "Unpriced traces by variant", [prom_target(
            _rate("ragpulse_generation_unpriced_total", _SVC, by="variant, reason"), "{{variant}} {{reason}}")],
            unit="reqps", description="No LLM span (no_model) or a model without a price (unknown_model): cost NULL"),
        panel(lay, "Latency p95 per stage by variant", [prom_target(
            f"histogram_quantile(0.95, {_rate('ragpulse_stage_latency_seconds_bucket', _SVC, by='variant, stage, le')})",
            "{{variant}} {{stage}}")], unit="s"),
        panel(lay, "Judged traces by variant", [prom_target(
            _rate("ragpulse_failure_modes_total", _SEL), "{{variant}}")], unit="reqps"),
    ]  # fmt: skip
