"""Builders for Grafana dashboard JSON (current schema): panels, targets, variables, layout.

Datasources are template variables (``${datasource}``, ``${clickhouse}``), never
hard-coded uids, so a dashboard imports into any Grafana.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "SCHEMA_VERSION",
    "PROM",
    "CH",
    "CH_PLUGIN",
    "Layout",
    "prom_target",
    "sql_target",
    "panel",
    "datasource_var",
    "query_var",
    "custom_var",
    "constant_var",
    "textbox_var",
    "dashboard",
]

SCHEMA_VERSION = 39
CH_PLUGIN = "grafana-clickhouse-datasource"
PROM = {"type": "prometheus", "uid": "${datasource}"}
CH = {"type": CH_PLUGIN, "uid": "${clickhouse}"}


class Layout:
    """Hands out unique panel ids and gridPos rows on Grafana's 24-column grid."""

    def __init__(self) -> None:
        self.next_id, self.x, self.y, self.row_h = 1, 0, 0, 0

    def place(self, w: int, h: int) -> tuple[int, dict[str, int]]:
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        pid, self.next_id = self.next_id, self.next_id + 1
        return pid, pos

    def row(self, title: str) -> dict[str, Any]:
        """A collapsed=false row header starting a new line."""
        if self.x:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pid, pos = self.place(24, 1)
        self.x, self.y, self.row_h = 0, self.y + 1, 0
        return {"id": pid, "type": "row", "title": title, "collapsed": False, "gridPos": pos, "panels": []}


def prom_target(expr: str, legend: str = "", ref: str = "A") -> dict[str, Any]:
    return {"refId": ref, "datasource": PROM, "expr": expr, "legendFormat": legend or "__auto", "range": True}


def sql_target(sql: str, fmt: str = "table", ref: str = "A") -> dict[str, Any]:
    """A grafana-clickhouse-datasource SQL-editor query (``fmt``: table or time_series)."""
    return {
        "refId": ref,
        "datasource": CH,
        "editorType": "sql",
        "queryType": "timeseries" if fmt == "time_series" else "table",
        "format": 0 if fmt == "time_series" else 1,
        "rawSql": sql,
    }


def panel(
    layout: Layout,
    title: str,
    targets: Sequence[dict[str, Any]],
    *,
    kind: str = "timeseries",
    w: int = 8,
    h: int = 8,
    unit: str = "short",
    description: str = "",
    thresholds: Sequence[tuple[str, float]] = (),
    links: Sequence[dict[str, Any]] = (),
    overrides: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """One panel; ``thresholds`` ((color, value), ...) are drawn as lines on time series."""
    pid, pos = layout.place(w, h)
    steps: list[dict[str, Any]] = [{"color": "green", "value": None}]
    steps += [{"color": color, "value": value} for color, value in thresholds]
    defaults: dict[str, Any] = {
        "unit": unit,
        "thresholds": {"mode": "absolute", "steps": steps},
        "links": list(links),
    }
    if kind == "timeseries":
        defaults["custom"] = {"thresholdsStyle": {"mode": "line" if thresholds else "off"}}
    return {
        "id": pid,
        "type": kind,
        "title": title,
        "description": description,
        "gridPos": pos,
        "datasource": targets[0]["datasource"],
        "targets": list(targets),
        "fieldConfig": {"defaults": defaults, "overrides": list(overrides)},
        "options": {},
    }


def datasource_var(name: str, plugin: str, label: str) -> dict[str, Any]:
    return {"name": name, "label": label, "type": "datasource", "query": plugin, "current": {}, "hide": 0}


def query_var(name: str, ds: dict[str, Any], query: str, *, include_all: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "label": name,
        "type": "query",
        "datasource": ds,
        "query": query,
        "definition": query,
        "refresh": 2,
        "includeAll": include_all,
        "multi": include_all,
        "allValue": ".*" if include_all else None,
        "current": {},
        "sort": 1,
        "hide": 0,
    }


def custom_var(name: str, values: Sequence[str]) -> dict[str, Any]:
    return {
        "name": name,
        "label": name,
        "type": "custom",
        "query": ",".join(values),
        "includeAll": True,
        "multi": True,
        "current": {},
        "hide": 0,
    }


def constant_var(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "type": "constant", "query": value, "hide": 2}


def textbox_var(name: str, label: str) -> dict[str, Any]:
    return {"name": name, "label": label, "type": "textbox", "query": "", "current": {}, "hide": 0}


def dashboard(
    uid: str, title: str, description: str, variables: list[dict[str, Any]], panels: list[dict[str, Any]]
) -> dict[str, Any]:
    """A dashboard with a fixed uid, no numeric id (Grafana assigns one on import)."""
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["ragpulse"],
        "editable": True,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "utc",
        "refresh": "1m",
        "templating": {"list": variables},
        "annotations": {"list": []},
        "links": [],
        "panels": panels,
    }
