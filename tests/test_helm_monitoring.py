"""The chart's PrometheusRule and dashboard ConfigMaps are the repository's rules/ and dashboards/.

helm reads files only inside the chart, so helm/ragpulse/files/rules and files/dashboards are
links to rules/ and dashboards/: one copy of each file. These tests check the rendered
objects against those directories (groups equal, dashboards byte for byte), that a packaged
chart carries the same bytes, and `promtool check rules` on the rendered PrometheusRule.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from pathlib import Path

import yaml

from tests.helm_chart import CHART, ROOT, helm, of_kind, render_set

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
