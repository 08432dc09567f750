"""``ragpulse dashboards push`` through grafana-client against a local server speaking Grafana's HTTP API."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml
from ragpulse.collector.cli.main import main

from tests.grafana_api import FakeGrafana
from tests.services import ROOT, free_port

TOKEN = "glsa_test"


@pytest.fixture()
def grafana() -> Iterator[FakeGrafana]:
    server = FakeGrafana(token=TOKEN)
    try:
        yield server
    finally:
        server.close()


def _alert_rule_count() -> int:
    """The alerting rules of the rendered mixin (rules/*.yaml), counted independently of the pusher."""
    groups = [
        g
        for path in sorted((ROOT / "rules").glob("*.yaml"))
        for g in yaml.safe_load(path.read_text())["groups"]
    ]
    return sum(1 for g in groups for rule in g["rules"] if "alert" in rule)


def _push(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["dashboards", "push", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_help_works(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["dashboards", "push", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert (
        "--url" in out
        and "--token" in out
        and "--basic-auth" in out
        and "--dry-run" in out
        and "--alerts" in out
    )


def test_create_then_unchanged_then_update(grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _push(capsys, "--url", grafana.url, "--token", TOKEN)
    assert code == 0
    assert "folder ragpulse: created" in out and out.count(": created") == 4
    assert set(grafana.dashboards) == {"ragpulse-quality", "ragpulse-drilldown", "ragpulse-judge-health"}
    on_disk = json.loads((ROOT / "dashboards" / "ragpulse-quality.json").read_text())
    stored = grafana.dashboards["ragpulse-quality"]
    assert stored["folderUid"] == "ragpulse" and stored["dashboard"]["panels"] == on_disk["panels"]
    assert ("POST", "/api/folders") in grafana.writes and ("POST", "/api/dashboards/db") in grafana.writes

    grafana.log.clear()
    code, out, _ = _push(capsys, "--url", grafana.url, "--token", TOKEN)
    assert code == 0 and "Nothing to change: 4 objects already up to date" in out
    assert grafana.writes == []

    grafana.dashboards["ragpulse-quality"]["dashboard"]["title"] = "edited by hand"
    grafana.folders["ragpulse"]["title"] = "old name"
    grafana.log.clear()
    code, out, _ = _push(capsys, "--url", grafana.url, "--basic-auth", "admin:s3cret")
    assert code == 0
    assert "folder ragpulse: updated" in out and "dashboard ragpulse-quality: updated" in out
    assert "dashboard ragpulse-drilldown: unchanged" in out
    assert grafana.dashboards["ragpulse-quality"]["dashboard"]["title"] == on_disk["title"]
    assert grafana.dashboards["ragpulse-quality"]["dashboard"]["version"] == 2
    assert sorted(grafana.writes) == [("POST", "/api/dashboards/db"), ("PUT", "/api/folders/ragpulse")]


def test_dry_run_writes_nothing_and_says_what_would_change(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _push(capsys, "--url", grafana.url, "--token", TOKEN, "--dry-run")
    assert code == 0
    assert "folder ragpulse: would create" in out and "dashboard ragpulse-quality: would create" in out
    assert "Dry run, nothing written" in out
    assert grafana.writes == [] and not grafana.dashboards


def test_alerts_are_provisioned_as_grafana_managed_rules_idempotently(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _push(capsys, "--url", grafana.url, "--token", TOKEN, "--alerts")
    assert code == 0
    assert len(grafana.rules) == _alert_rule_count()  # one Grafana rule per alert rule of rules/
    burn = [r for r in grafana.rules.values() if r["labels"]["alertname"] == "RagpulseFaithfulnessBudgetBurn"]
    assert {r["labels"]["window"] for r in burn} == {"1h", "6h", "3d"}
    rule = burn[0]
    assert rule["folderUID"] == "ragpulse" and rule["data"][0]["datasourceUid"] == "prom-main"
    assert "ragpulse:sli_error_ratio" in rule["data"][0]["model"]["expr"]
    assert rule["annotations"]["runbook_url"].endswith("#ragpulsefaithfulnessbudgetburn")
    grafana.log.clear()
    code, out, _ = _push(capsys, "--url", grafana.url, "--token", TOKEN, "--alerts")
    assert code == 0 and "Nothing to change" in out and grafana.writes == []


def test_wrong_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _push(capsys, "--url", f"http://127.0.0.1:{free_port()}", "--token", TOKEN)
    assert code == 2 and err.count("\n") == 1 and "cannot reach Grafana at" in err


def test_rejected_token_is_one_line(grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _push(capsys, "--url", grafana.url, "--token", "wrong")
    assert code == 2 and err.count("\n") == 1 and "rejected the credentials (401)" in err
    assert grafana.writes == []


def test_missing_folder_permission_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    viewer = FakeGrafana(token=TOKEN, read_only=True)
    try:
        code, _, err = _push(capsys, "--url", viewer.url, "--token", TOKEN)
    finally:
        viewer.close()
    assert code == 2 and err.count("\n") == 1
    assert "permission denied (403) for folder 'ragpulse'" in err
