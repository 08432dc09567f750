"""The monitoring mixin's Prometheus rules: rendered bytes, promtool checks and unit tests, test coverage.

The coverage checks read the checked-in YAML (not the renderer), so an alert
added by hand without promtool cases fails here too.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from ragpulse.collector.monitoring.config import ObjectivesError, load_objectives
from ragpulse.collector.monitoring.render import render_all

from tests.services import ROOT

RULES = ROOT / "rules"
TESTS = RULES / "tests"


def _alert_rules() -> list[dict[str, Any]]:
    out = []
    for path in sorted(RULES.glob("*.yaml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            out += [r for r in group["rules"] if "alert" in r]
    return out


def _test_groups() -> list[dict[str, Any]]:
    return [
        g for path in sorted(TESTS.glob("*_test.yaml")) for g in yaml.safe_load(path.read_text())["tests"]
    ]


def test_checked_in_files_are_exactly_what_the_config_renders() -> None:
    rendered = render_all(load_objectives())
    on_disk = {
        str(p.relative_to(ROOT))
        for d in ("rules", "dashboards")
        for p in (ROOT / d).rglob("*")
        if p.is_file()
    }
    assert on_disk == set(rendered), (
        "stale or missing files: run `python -m ragpulse.collector.monitoring render`"
    )
    for rel, text in rendered.items():
        assert (ROOT / rel).read_bytes() == text.encode(), f"{rel} differs from rendering; re-render"


@pytest.mark.services
def test_promtool_check_rules_passes_on_every_file(promtool: str) -> None:
    files = sorted(str(p) for p in RULES.glob("*.yaml"))
    assert len(files) == 6
    run = subprocess.run([promtool, "check", "rules", *files], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("SUCCESS") == len(files)


@pytest.mark.services
def test_promtool_unit_tests_pass(promtool: str) -> None:
    """Each test file runs in its own promtool process, in parallel (they take seconds to tens of seconds)."""
    procs = {
        p.name: subprocess.Popen([promtool, "test", "rules", p.name], cwd=TESTS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for p in sorted(TESTS.glob("*_test.yaml"))
    }  # fmt: skip
    assert len(procs) == 6
    failures = {}
    for name, proc in procs.items():
        out, _ = proc.communicate(timeout=400)
        if proc.returncode != 0 or "SUCCESS" not in out:
            failures[name] = out[-4000:]
    assert not failures, failures


def test_every_alert_has_firing_quiet_and_recovery_cases() -> None:
    groups = _test_groups()
    names = {r["alert"] for r in _alert_rules()}
    assert len(names) == 20
    for name in sorted(names):
        checks = [(g, t) for g in groups for t in g["alert_rule_test"] if t["alertname"] == name]
        firing = [t for _, t in checks if t["exp_alerts"]]
        quiet = [t for _, t in checks if not t["exp_alerts"]]
        assert firing and quiet, f"{name} needs a test case where it fires and one where it does not"
        recovered = [
            g for g, _ in checks
            if any(t["alertname"] == name and t["exp_alerts"] for t in g["alert_rule_test"])
            and any(t["alertname"] == name and not t["exp_alerts"] for t in g["alert_rule_test"])
        ]  # fmt: skip
        assert recovered, f"{name} needs a case that fires and then resolves"


def test_every_guarded_alert_has_a_volume_guard_case() -> None:
    """Alerts on a ratio, quantile or mean carry a minimum-volume guard, and a case shows it holds."""
    groups = _test_groups()
    ratio_like = ("/", "histogram_quantile", "sli_error_ratio")
    guarded = {r["alert"] for r in _alert_rules() if any(m in r["expr"] for m in ratio_like)}
    guarded -= {"RagpulseJudgeBudgetPaused"}  # a share of time, not of events: no volume to guard
    assert "RagpulseFaithfulnessBudgetBurn" in guarded and "RagpulseJudgeErrors" in guarded
    for rule in _alert_rules():
        if rule["alert"] in guarded:
            assert ">=" in rule["expr"].split("and on", 1)[-1], (
                f"{rule['alert']}: no volume guard in {rule['expr']}"
            )
    for name in sorted(guarded | {"RagpulseJudgingStalled"}):
        cases = [g for g in groups if g["name"].startswith(name) and "volume guard" in g["name"]]
        assert cases and all(not t["exp_alerts"] for g in cases for t in g["alert_rule_test"]), name


def test_every_alert_carries_the_contract_labels_and_annotations() -> None:
    docs = (ROOT / "docs" / "alerts.md").read_text()
    anchors = {line[3:].strip().lower() for line in docs.splitlines() if line.startswith("## ")}
    for rule in _alert_rules():
        name = rule["alert"]
        assert name.startswith("Ragpulse") and name[8].isupper()
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}
        notes = rule["annotations"]
        assert set(notes) == {"summary", "description", "runbook_url", "dashboard_url"}, name
        assert notes["runbook_url"].endswith(f"docs/alerts.md#{name.lower()}")
        assert name.lower() in anchors, f"docs/alerts.md has no section ## {name}"
        assert "/d/ragpulse-quality/" in notes["dashboard_url"]


def test_the_burn_alerts_use_the_workbook_windows_and_factors() -> None:
    burns = [r for r in _alert_rules() if r["alert"] == "RagpulseFaithfulnessBudgetBurn"]
    got = sorted((r["labels"]["window"], r["labels"]["severity"], r["for"]) for r in burns)
    assert got == [("1h", "critical", "2m"), ("3d", "warning", "1h"), ("6h", "critical", "15m")]
    by_window = {r["labels"]["window"]: r["expr"] for r in burns}
    budget = 'ragpulse:sli_error_budget{objective="faithfulness"}'
    for window, short, factor in (("1h", "5m", "14.4"), ("6h", "30m", "6"), ("3d", "6h", "1")):
        for w in (window, short):
            line = f'rate{w}{{objective="faithfulness"}}\n    > on (objective) group_left () ({factor} * {budget})'
            assert line in by_window[window], (window, by_window[window])
    budgets = [r for r in _all_rules() if r.get("record") == "ragpulse:sli_error_budget"]
    assert {r["labels"]["objective"]: r["expr"] for r in budgets}["faithfulness"] == "vector(0.03)"


def _all_rules() -> list[dict[str, Any]]:
    return [
        r
        for p in sorted(RULES.glob("*.yaml"))
        for g in yaml.safe_load(p.read_text())["groups"]
        for r in g["rules"]
    ]


def test_objectives_appear_only_in_the_budget_rules() -> None:
    """Other objectives change the budget rules' vector() and nothing else in rules/ and dashboards/.

    This is what lets a deployment (the helm chart) set objectives by replacing those expressions;
    the promtool tests, rendered for the other objectives, still pass on such rules (test_helm_monitoring).
    """
    other = {"faithfulness": {"objective": 0.98}, "hallucination": {"objective": 0.99999}}
    base = render_all(load_objectives())
    changed = render_all(load_objectives(overrides={"objectives": other}))
    differs = {rel for rel in base if base[rel] != changed[rel] and not rel.startswith("rules/tests/")}
    assert differs == {"rules/ragpulse-recording.yaml"}
    a, b = (yaml.safe_load(d["rules/ragpulse-recording.yaml"])["groups"] for d in (base, changed))
    moved = {
        (ga["name"], ra["labels"]["objective"], rb["expr"])
        for ga, gb in zip(a, b, strict=True)
        for ra, rb in zip(ga["rules"], gb["rules"], strict=True)
        if ra != rb
    }
    assert moved == {
        ("ragpulse-sli-budgets", "faithfulness", "vector(0.02)"),
        ("ragpulse-sli-budgets", "hallucination", "vector(1e-05)"),
    }


def test_config_rejects_an_objective_whose_page_could_never_fire(tmp_path: Path) -> None:
    with pytest.raises(ObjectivesError, match="could never fire"):
        load_objectives(overrides={"objectives": {"faithfulness": {"objective": 0.9}}})
    with pytest.raises(ObjectivesError, match="not in record_windows"):
        load_objectives(overrides={"burn_windows": [{"name": "x", "severity": "critical", "long": "2h", "short": "5m",
                                                      "factor": 2, "for": "1m", "min_judged": 1}]})  # fmt: skip
    bad = tmp_path / "o.yaml"
    bad.write_text("links: {}\n")
    with pytest.raises(ObjectivesError, match="lacks"):
        load_objectives(bad)
