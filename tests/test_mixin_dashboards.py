"""The mixin's Grafana dashboards: structure (schema, panels, layout, ids, datasource variables)."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.services import ROOT

DASHBOARDS = ROOT / "dashboards"


def _dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json"))}


def _panels(d: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in d["panels"]:
        out.append(p)
        out += p.get("panels", [])
    return out


def test_three_dashboards_with_fixed_uids_current_schema_and_datasource_variables() -> None:
    boards = _dashboards()
    assert {d["uid"] for d in boards.values()} == {
        "ragpulse-quality",
        "ragpulse-drilldown",
        "ragpulse-judge-health",
    }
    for name, d in boards.items():
        assert d["schemaVersion"] >= 39 and "id" not in d, name
        variables = {v["name"]: v for v in d["templating"]["list"]}
        ds_vars = {n for n, v in variables.items() if v["type"] == "datasource"}
        assert ds_vars, f"{name}: no datasource variable"
        assert "service" in variables and "judge" in variables, name
        ids = [p["id"] for p in _panels(d)]
        assert len(ids) == len(set(ids)), f"{name}: duplicate panel ids"
        text = json.dumps(d)
        # Datasources only through variables: every datasource uid is a ${variable} of type datasource.
        for uid in re.findall(r'"uid": "([^"]*)"', json.dumps([p.get("datasource") for p in _panels(d)])):
            assert uid.startswith("${") and uid[2:-1] in ds_vars, f"{name}: hard-coded datasource uid {uid}"
        assert '"uid": "' + d["uid"] in text


def test_every_panel_has_a_place_on_the_grid_and_no_overlap() -> None:
    for name, d in _dashboards().items():
        cells: set[tuple[int, int]] = set()
        for p in _panels(d):
            pos = p["gridPos"]
            assert set(pos) == {"h", "w", "x", "y"} and 0 <= pos["x"] and pos["x"] + pos["w"] <= 24, (
                name,
                p["title"],
            )
            for dx in range(pos["w"]):
                for dy in range(pos["h"]):
                    cell = (pos["x"] + dx, pos["y"] + dy)
                    assert cell not in cells, f"{name}: panel {p['title']!r} overlaps another"
                    cells.add(cell)
            if p["type"] != "row":
                assert p["targets"] and all(t["refId"] for t in p["targets"]), (name, p["title"])
                for t in p["targets"]:
                    assert t["datasource"] == p["datasource"] or p["datasource"]["uid"].startswith("${")


def test_the_quality_overview_draws_the_alert_thresholds() -> None:
    d = _dashboards()["ragpulse-quality.json"]
    by_title = {p["title"]: p for p in _panels(d)}
    sli = by_title["Unsupported-claim ratio"]
    # The limits are the recorded budget and the fast-burn page line, queried, so that objectives
    # set at deployment are the ones drawn; no number of the objectives is written in the panel.
    exprs = {t["refId"]: t["expr"] for t in sli["targets"]}
    assert exprs["C"] == 'ragpulse:sli_error_budget{objective="faithfulness"}'
    assert exprs["D"] == '14.4 * ragpulse:sli_error_budget{objective="faithfulness"}'
    dashed = {o["matcher"]["options"]: o["properties"] for o in sli["fieldConfig"]["overrides"]}
    assert set(dashed) == {"C", "D"}
    assert all(
        {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}} in v for v in dashed.values()
    )
    assert [s["value"] for s in sli["fieldConfig"]["defaults"]["thresholds"]["steps"]] == [None]
    for title in ("Failure modes", "Abstentions by kind", "Claim verdicts", "Sampling decisions by reason",
                  "Judge latency p95", "Judge cost per hour", "Judge errors", "Consumer lag", "Dead-lettered records",
                  "Storage up"):  # fmt: skip
        assert title in by_title, title


def test_the_drilldown_links_a_trace_id_to_its_per_trace_view() -> None:
    d = _dashboards()["ragpulse-drilldown.json"]
    worst = next(p for p in _panels(d) if p["title"].startswith("Worst traces ("))
    links = worst["fieldConfig"]["overrides"][0]["properties"][0]["value"]
    assert "var-trace_id=${__value.raw}" in links[0]["url"] and "/d/ragpulse-drilldown/" in links[0]["url"]
    assert any(v["name"] == "failure_mode" and v["includeAll"] for v in d["templating"]["list"])
