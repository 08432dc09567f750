"""The variant-regression alert (``rules/ragpulse-variant-alerts.yaml``; its promtool cases are
:mod:`.variant_rule_tests`).

``RagpulseVariantRegression`` compares each variant (the bounded ``variant``
label of the quality metrics, from ``rag.variant``) with the rest of its
service under the same judge: it fires when the variant's unsupported-claim
ratio over ``window`` is more than ``min_diff`` above the ratio of every other
claim of the service (other variants and calls without one), and both the
variant and the rest have at least ``min_claims`` judged claims in the window.
A live A/B test thus pages on the arm that makes answers worse, while the
service-wide SLO may still be inside its budget because the arm is small.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .common import QUALITY_BY, alert_annotations, num, pct
from .config import ObjectivesError, config_section

__all__ = ["variant_alerts", "check_variant_config", "CLAIMS"]

_BY = f"{QUALITY_BY}, variant"
CLAIMS = "ragpulse_claims_total"
_BAD = 'verdict=~"unsupported|contradicted"'


def check_variant_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``variant_regression`` section, checked (ObjectivesError names the problem)."""
    keys = ("alert", "severity", "window", "min_diff", "min_claims", "for")
    vr = config_section(config, "variant_regression", keys, durations=("window", "for"))
    if not 0.0 < float(vr["min_diff"]) < 1.0:
        raise ObjectivesError("variant_regression.min_diff must lie strictly between 0 and 1")
    return vr


def _expr(vr: Mapping[str, Any]) -> str:
    w = vr["window"]
    bad_v = f'sum by ({_BY}) (rate({CLAIMS}{{{_BAD}, variant!=""}}[{w}]))'
    all_v = f'sum by ({_BY}) (rate({CLAIMS}{{variant!=""}}[{w}]))'
    bad_s = f"sum by ({QUALITY_BY}) (rate({CLAIMS}{{{_BAD}}}[{w}]))"
    all_s = f"sum by ({QUALITY_BY}) (rate({CLAIMS}[{w}]))"
    n_v = f'sum by ({_BY}) (increase({CLAIMS}{{variant!=""}}[{w}]))'
    n_s = f"sum by ({QUALITY_BY}) (increase({CLAIMS}[{w}]))"
    # "or 0 * total": no bad claims yet is a ratio of 0, not a missing series.
    variant_ratio = f"({bad_v} or 0 * {all_v})\n  / {all_v}"
    rest_ratio = (
        f"(({bad_s} or 0 * {all_s}) - on ({QUALITY_BY}) group_right () ({bad_v} or 0 * {all_v}))\n"
        f"  / ({all_s} - on ({QUALITY_BY}) group_right () {all_v})"
    )
    return (
        f"(\n  {variant_ratio}\n)\n- on ({_BY})\n(\n  {rest_ratio}\n)\n> {num(vr['min_diff'])}\n"
        f"and on ({_BY}) {n_v} >= {vr['min_claims']}\n"
        f"and on ({_BY}) ({n_s} - on ({QUALITY_BY}) group_right () {n_v}) >= {vr['min_claims']}\n"
    )


def variant_alerts(config: Mapping[str, Any]) -> dict[str, Any]:
    """The rule document of the variant-regression alert."""
    vr = check_variant_config(config)
    summary = (
        "Variant {{ $labels.variant }} of {{ $labels.service }} makes more unsupported claims than the rest"
    )
    description = (
        "The unsupported-claim ratio of variant {{ $labels.variant }} of service {{ $labels.service }} "
        "(judge {{ $labels.judge }}) is {{ $value | humanizePercentage }} above the rest of the service "
        f"over the last {vr['window']} (alert above {pct(vr['min_diff'])}, at least {vr['min_claims']} judged "
        "claims on each side). Compare the variants with `ragpulse compare` before widening its rollout."
    )
    rule = {
        "alert": vr["alert"],
        "expr": _expr(vr),
        "for": vr["for"],
        "labels": {"severity": vr["severity"]},
        "annotations": alert_annotations(config, vr["alert"], summary, description),
    }
    return {"groups": [{"name": "ragpulse-variant-alerts", "rules": [rule]}]}
