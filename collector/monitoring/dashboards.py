"""Render the mixin's Grafana dashboards (``dashboards/*.json``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .dashboard_quality import quality_overview
from .dashboard_sql import drilldown, judge_health

__all__ = ["DASHBOARD_FILES", "dashboard_documents", "render_dashboards"]

DASHBOARD_FILES = ("ragpulse-quality.json", "ragpulse-drilldown.json", "ragpulse-judge-health.json")


def dashboard_documents(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """File name -> dashboard JSON object."""
    return {
        "ragpulse-quality.json": quality_overview(config),
        "ragpulse-drilldown.json": drilldown(),
        "ragpulse-judge-health.json": judge_health(config),
    }


def render_dashboards(config: Mapping[str, Any]) -> dict[str, str]:
    """File name -> JSON text (two-space indent, trailing newline: stable bytes for the regeneration test)."""
    return {
        n: json.dumps(d, indent=2, ensure_ascii=False) + "\n" for n, d in dashboard_documents(config).items()
    }
