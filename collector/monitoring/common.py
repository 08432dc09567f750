"""Small helpers shared by the rule, test and dashboard renderers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "QUALITY_BY",
    "QUALITY_UID",
    "num",
    "budget_text",
    "pct",
    "query_value",
    "anchor",
    "alert_annotations",
]

#: The label set every quality SLI is aggregated to.
QUALITY_BY = "service, judge"

#: Fixed uid of the quality-overview dashboard (alerts link to it).
QUALITY_UID = "ragpulse-quality"


def num(x: float) -> str:
    """A threshold as PromQL/YAML text without float noise (0.432, not 0.43199999999999994)."""
    return f"{round(float(x), 10):g}"


def budget_text(x: float) -> str:
    """An error budget as rule text: the shortest digits of ``x`` rounded to 10 places.

    This is how Go's ``%v`` writes the same float64, so the helm chart, which computes
    ``1 - objective`` in its template, writes the very bytes this renderer does.
    """
    return repr(round(float(x), 10))


def query_value(query: str) -> str:
    """Template text of the first value ``query`` returns at alert time, as a percentage."""
    return f"{{{{ with query `{query}` }}}}{{{{ . | first | value | humanizePercentage }}}}{{{{ end }}}}"


def pct(x: float) -> str:
    """A ratio as a percentage the way Prometheus's humanizePercentage writes it (%.4g%)."""
    return f"{float(x) * 100:.4g}%"


def anchor(alert: str) -> str:
    """The docs/alerts.md heading anchor of an alert (GitHub's slug of ``## AlertName``)."""
    return alert.lower()


def alert_annotations(
    config: Mapping[str, Any], alert: str, summary: str, description: str
) -> dict[str, str]:
    """The four annotations every alert carries (DESIGN.md "Alerts")."""
    grafana = str(config["links"]["grafana"]).rstrip("/")
    return {
        "summary": summary,
        "description": description,
        "runbook_url": f"{config['links']['runbook']}#{anchor(alert)}",
        "dashboard_url": f"{grafana}/d/{QUALITY_UID}/ragpulse-quality-overview?var-service={{{{ $labels.service }}}}",
    }
