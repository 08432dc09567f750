"""The HTML eval report in real headless Chromium: it renders with no console errors, and the data
of every chart (metric bars with intervals, paired differences, slice table, position curve) equal
the ``--json`` output. A page with a deliberate error shows the check can fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.cli.main import main
from ragpulse.collector.eval.files import write_jsonl
from ragpulse.policy_rag.evalset import build_evalset

from tests.browser import load_page
from tests.services import chromium_binary

APP = "ragpulse.policy_rag.replay"

READ_CHARTS = """JSON.stringify({
  rendered: document.body.dataset.rendered || null,
  metrics: [...document.querySelectorAll('#metrics-chart g.metric')].map(g => ({...g.dataset})),
  deltas: [...document.querySelectorAll('#delta-chart g.delta')].map(g => ({...g.dataset})),
  slices: [...document.querySelectorAll('#slices tr.slice-row')].map(tr => ({slice: tr.dataset.slice, n: tr.dataset.n,
    cells: [...tr.querySelectorAll('td[data-metric]')].map(td => ({...td.dataset}))})),
  sweep: [...document.querySelectorAll('#sweep-chart circle.pos')].map(c => ({...c.dataset})),
  failing: [...document.querySelectorAll('#failures .case')].map(d => d.dataset.case),
})"""


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_binary()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("report")
    evalset, base = tmp / "policy.jsonl", tmp / "careful.jsonl"
    write_jsonl(evalset, build_evalset())
    cache = ["--cache", str(tmp / "judgments.sqlite"), "-q"]
    assert (
        main(
            [
                "eval",
                str(evalset),
                "--app",
                f"{APP}:careful",
                "--corpus-from-snapshot",
                "--save-run",
                str(base),
                *cache,
            ]
        )
        == 0
    )
    html, out = tmp / "report.html", tmp / "eval.json"
    args = [
        "eval",
        str(evalset),
        "--app",
        f"{APP}:lost_in_the_middle",
        "--corpus-from-snapshot",
        "--sweep-position",
    ]
    assert main([*args, "--baseline", str(base), "-o", str(html), "--json", str(out), *cache]) == 0
    return html, json.loads(out.read_text(encoding="utf-8"))


def _num(text: str) -> float | None:
    return None if text in ("", "null") else float(text)


def test_report_renders_without_errors_and_charts_equal_the_json(
    chromium: str, report: tuple[Path, dict[str, Any]]
) -> None:
    html, doc = report
    page = load_page(chromium, html, READ_CHARTS)
    assert page.errors() == []
    charts = json.loads(page.value)
    assert charts["rendered"] == "1"

    overall = doc["overall"]["metrics"]
    shown = {g["metric"]: g for g in charts["metrics"]}
    unit = [
        k
        for k, v in overall.items()
        if v["n"] and "ci" in v and isinstance(v.get("mean"), float) and k in shown
    ]
    assert len(shown) >= 20 and set(shown) == set(unit)
    for name, g in shown.items():
        assert _num(g["mean"]) == overall[name]["mean"] and int(g["n"]) == overall[name]["n"]
        assert [_num(g["lo"]), _num(g["hi"])] == overall[name]["ci"]

    comp = doc["comparison"]["overall"]
    assert charts["deltas"]
    for g in charts["deltas"]:
        c = comp[g["metric"]]
        assert _num(g["delta"]) == c["delta"] and [_num(g["lo"]), _num(g["hi"])] == c["ci"]
        assert g["verdict"] == c["verdict"] and int(g["n"]) == c["n"]

    rows = {r["slice"]: r for r in charts["slices"]}
    expected_rows = {f"{f}={v}": agg for f, vals in doc["slices"].items() for v, agg in vals.items()}
    assert set(rows) == set(expected_rows)
    for label, row in rows.items():
        assert int(row["n"]) == expected_rows[label]["n"]
        for cell in row["cells"]:
            assert _num(cell["mean"]) == expected_rows[label]["metrics"][cell["metric"]]["mean"]

    sweep = doc["position_sweep"]
    points = {(p["metric"], int(p["position"])): _num(p["value"]) for p in charts["sweep"]}
    want = {
        (m, pos): v
        for m, vals in sweep["metrics"].items()
        for pos, v in zip(sweep["positions"], vals, strict=True)
    }
    assert points == want

    failing = [
        c["case_id"] for c in doc["cases"] if c["metrics"]["strict_pass"] is False or c["details"]["error"]
    ]
    assert charts["failing"] == failing and failing


def test_the_check_sees_console_errors(chromium: str, tmp_path: Path) -> None:
    page_file = tmp_path / "broken.html"
    page_file.write_text(
        "<!DOCTYPE html><html><body><script>console.error('chart data missing'); undefinedFunction();</script></body></html>",
        encoding="utf-8",
    )
    page = load_page(chromium, page_file, "document.title")
    errors = page.errors()
    assert any("chart data missing" in e for e in errors)
    assert any("undefinedFunction" in e for e in errors)
