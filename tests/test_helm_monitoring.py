"""The chart's PrometheusRule and dashboard ConfigMaps are the repository's rules/ and dashboards/.

helm reads files only inside the chart, so helm/ragpulse/files/rules and files/dashboards are
links to rules/ and dashboards/: one copy of each file. These tests check the rendered
objects against those directories (groups equal, dashboards byte for byte), that a packaged
chart carries the same bytes, and `promtool check rules` on the rendered PrometheusRule.
The `objectives` values replace the budget rules' expressions: with other objectives the
PrometheusRule is what the mixin's renderer writes for them, and the promtool unit tests the
renderer writes for them pass on it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from ragpulse.collector.monitoring.config import load_objectives
from ragpulse.collector.monitoring.rule_tests import render_rule_tests
from ragpulse.collector.monitoring.rules import BUDGET_GROUP, rule_documents

from tests.helm_chart import CHART, KUBE_VERSION, MINIMAL, ROOT, HelmError, helm, of_kind, render_set

RULES = sorted((ROOT / "rules").glob("*.yaml"))
DASHBOARDS = sorted((ROOT / "dashboards").glob("*.json"))
ON = ("--set", "prometheusRule.enabled=true", "--set", "grafanaDashboards.enabled=true")


def test_chart_files_are_the_repository_directories() -> None:
    assert RULES and DASHBOARDS
    assert (CHART / "files" / "rules").resolve() == (ROOT / "rules").resolve()
    assert (CHART / "files" / "dashboards").resolve() == (ROOT / "dashboards").resolve()


def test_prometheus_rule_holds_every_group_of_rules() -> None:
    (rule,) = of_kind(render_set("minimal", *ON), "PrometheusRule")
    expected = [group for path in RULES for group in yaml.safe_load(path.read_text())["groups"]]
    assert rule["spec"]["groups"] == expected
    assert len(expected) == len({g["name"] for g in expected})


#: Objectives other than the mixin's defaults (budgets 0.02, 1e-05 and 0.0625).
OTHER = {"faithfulness": 0.98, "hallucination": 0.99999, "retrieval_failure": 0.9375}
OTHER_ARGS = tuple(a for k, v in OTHER.items() for a in ("--set-json", f"objectives.{k}={v}"))


def _mixin_objectives() -> dict[str, float]:
    return {name: obj["objective"] for name, obj in load_objectives()["objectives"].items()}


def _config_objectives(docs: list[dict]) -> dict:
    (cm,) = [d for d in of_kind(docs, "ConfigMap") if "objectives.yaml" in d["data"]]
    return yaml.safe_load(cm["data"]["objectives.yaml"])


def test_default_objectives_are_the_mixins() -> None:
    """values.yaml and its schema name the mixin's objectives with its numbers and its fast-burn limit."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["objectives"] == _mixin_objectives()
    schema = json.loads((CHART / "values.schema.json").read_text())["properties"]["objectives"]
    assert set(schema["properties"]) == set(schema["required"]) == set(_mixin_objectives())
    top = max(float(bw["factor"]) for bw in load_objectives()["burn_windows"])
    for prop in schema["properties"].values():
        assert prop["exclusiveMinimum"] == 1 - 1 / top and prop["exclusiveMaximum"] == 1


def test_objectives_from_values_feed_the_rule_and_the_configmap() -> None:
    """Other objectives: the ConfigMap states them, and the PrometheusRule is the mixin rendered with them."""
    default = render_set("minimal", *ON)
    assert _config_objectives(default) == {
        "objectives": {k: {"objective": v} for k, v in _mixin_objectives().items()}
    }
    docs = render_set("minimal", *ON, *OTHER_ARGS)
    overrides = _config_objectives(docs)
    assert {k: v["objective"] for k, v in overrides["objectives"].items()} == {**_mixin_objectives(), **OTHER}
    expected = rule_documents(load_objectives(overrides=overrides))
    (rule,) = of_kind(docs, "PrometheusRule")
    assert rule["spec"]["groups"] == [g for name in sorted(expected) for g in expected[name]["groups"]]
    (before,) = of_kind(default, "PrometheusRule")
    changed = {
        (g["name"], r["labels"]["objective"], r["expr"])
        for g, g0 in zip(rule["spec"]["groups"], before["spec"]["groups"], strict=True)
        for r, r0 in zip(g["rules"], g0["rules"], strict=True)
        if r != r0
    }
    assert changed == {
        (BUDGET_GROUP, "faithfulness", "vector(0.02)"),
        (BUDGET_GROUP, "hallucination", "vector(1e-05)"),
        (BUDGET_GROUP, "retrieval_failure", "vector(0.0625)"),
    }


def test_promtool_unit_tests_hold_on_the_rule_with_other_objectives(promtool: str, tmp_path: Path) -> None:
    """The mixin's burn-alert tests, rendered for other objectives, pass on the chart's rule for them.

    Only the cases of the changed objectives run (the others are the checked-in tests on rules/).
    """
    (rule,) = of_kind(render_set("minimal", *ON, *OTHER_ARGS), "PrometheusRule")
    (tmp_path / "rule.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    config = load_objectives(overrides={"objectives": {k: {"objective": v} for k, v in OTHER.items()}})
    alerts = tuple(config["objectives"][k]["alert"] for k in OTHER)
    tests = render_rule_tests(config, rule_documents(config))
    procs = []
    for name in ("slo-page_test.yaml", "slo-ticket_test.yaml"):
        doc = yaml.safe_load(tests[name])
        doc["rule_files"] = ["rule.yaml"]
        doc["tests"] = [t for t in doc["tests"] if t["name"].startswith(alerts)]
        assert len(doc["tests"]) >= 4 * len(alerts)
        (tmp_path / name).write_text(yaml.safe_dump(doc, sort_keys=False))
        procs.append(
            subprocess.Popen([promtool, "test", "rules", name], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        )  # fmt: skip
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "SUCCESS" in out, out[-4000:]


def test_an_objective_the_values_lack_fails_the_render(tmp_path: Path) -> None:
    """Rules with an objective the values do not set (the schema and the mixin drifted) fail with its name."""
    chart = tmp_path / "ragpulse"
    shutil.copytree(CHART, chart, symlinks=False, ignore=shutil.ignore_patterns("ci"))
    rec = chart / "files" / "rules" / "ragpulse-recording.yaml"
    doc = yaml.safe_load(rec.read_text())
    budgets = next(g for g in doc["groups"] if g["name"] == BUDGET_GROUP)
    budgets["rules"].append({**budgets["rules"][0], "labels": {"objective": "negative_feedback"}})
    rec.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(HelmError, match="objectives.negative_feedback is missing"):
        helm("template", "r", str(chart), "--kube-version", KUBE_VERSION, *MINIMAL, *ON)
    budgets["rules"] = [r for r in budgets["rules"] if r["labels"]["objective"] != "hallucination"]
    rec.write_text(yaml.safe_dump(doc, sort_keys=False))
    schema = json.loads((chart / "values.schema.json").read_text())
    schema["properties"]["objectives"]["properties"]["negative_feedback"] = {"type": "number"}
    (chart / "values.schema.json").write_text(json.dumps(schema))
    with pytest.raises(HelmError, match="objectives.hallucination: the rules have no objective of that name"):
        helm("template", "r", str(chart), "--kube-version", KUBE_VERSION, *MINIMAL, *ON,
             "--set-json", "objectives.negative_feedback=0.95")  # fmt: skip


def test_promtool_accepts_the_rendered_rules(promtool: str, tmp_path: Path) -> None:
    (rule,) = of_kind(render_set("production"), "PrometheusRule")
    path = tmp_path / "rendered.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    out = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    count = sum(len(g["rules"]) for g in rule["spec"]["groups"])
    assert f"{count} rules found" in out.stdout


def test_one_configmap_per_dashboard_byte_for_byte() -> None:
    docs = render_set("minimal", *ON, "--set", "grafanaDashboards.namespace=monitoring")
    maps = [d for d in of_kind(docs, "ConfigMap") if "grafana_dashboard" in d["metadata"]["labels"]]
    assert len(maps) == len(DASHBOARDS)
    by_file = {name: text for m in maps for name, text in m["data"].items()}
    for path in DASHBOARDS:
        assert by_file[path.name].encode() == path.read_bytes(), path.name
        json.loads(by_file[path.name])
    for m in maps:
        assert m["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert m["metadata"]["annotations"] == {"grafana_folder": "ragpulse"}
        assert m["metadata"]["namespace"] == "monitoring"


def test_monitoring_objects_on_and_off() -> None:
    on = render_set("production")
    assert len(of_kind(on, "PrometheusRule")) == 1
    assert len(of_kind(on, "ServiceMonitor")) == 1
    assert len(of_kind(on, "ScaledObject")) == 1
    dashboards = [d for d in of_kind(on, "ConfigMap") if "grafana_dashboard" in d["metadata"]["labels"]]
    assert len(dashboards) == len(DASHBOARDS)
    off = render_set("off")
    for kind in ("PrometheusRule", "ServiceMonitor", "ScaledObject"):
        assert not of_kind(off, kind), kind
    assert [d["metadata"]["name"] for d in of_kind(off, "ConfigMap")] == ["r-ragpulse"]


def test_packaged_chart_carries_the_same_files(tmp_path: Path) -> None:
    """`helm package` resolves the links: the published chart holds real copies of the same bytes."""
    helm("package", str(CHART), "--destination", str(tmp_path))
    (archive,) = tmp_path.glob("ragpulse-*.tgz")
    with tarfile.open(archive) as tar:
        packed = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if m.isfile()}
        for path in RULES:
            assert tar.extractfile(packed[f"files/rules/{path.name}"]).read() == path.read_bytes()
        for path in DASHBOARDS:
            assert tar.extractfile(packed[f"files/dashboards/{path.name}"]).read() == path.read_bytes()
        assert not any(name.startswith("ci/") for name in packed)


def test_scraped_job_matches_the_rules_collector_selector() -> None:
    """The ServiceMonitor names the job after a Service label the mixin's rules select on."""
    docs = render_set("production")
    (monitor,) = of_kind(docs, "ServiceMonitor")
    service = [s for s in of_kind(docs, "Service") if s["metadata"]["name"].endswith("-metrics")][0]
    job = service["metadata"]["labels"][monitor["spec"]["jobLabel"]]
    objectives = yaml.safe_load((ROOT / "collector" / "monitoring" / "objectives.yaml").read_text())
    match = re.fullmatch(r'job=~"(.*)"', objectives["collector_selector"])
    assert match and re.fullmatch(match.group(1), job), (objectives["collector_selector"], job)
