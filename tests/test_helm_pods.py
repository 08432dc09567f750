"""What the chart's pods would run, run for real against a real Kafka broker.

For each role the test renders the chart pointed at the session's broker, writes the
ConfigMap's collector.yaml, takes the container's args and plain env values from the
Deployment, and starts that command (only the config path and the DSN differ: a chDB path
stands in for the ClickHouse server). It then probes the ports and paths the Deployment's
probes name, and stops the process with SIGTERM the way the kubelet does, within the pod's
termination grace period. The ingest pod also runs the Alertmanager webhook with its token
from a (simulated) Secret: a numeric token, as a Secret may hold one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helm_chart import by_name, render
from tests.services import KafkaBroker, ManagedProcess, free_port

pytestmark = pytest.mark.services


def _probe(port: int, probe: dict[str, Any]) -> int:
    url = f"http://127.0.0.1:{port}{probe['httpGet']['path']}"
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def _wait_status(proc: ManagedProcess, port: int, probe: dict[str, Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.running(), f"{proc.name} exited:\n{proc.log_tail()}"
        if _probe(port, probe) == 200:
            return
        time.sleep(0.3)
    pytest.fail(f"{probe['httpGet']['path']} never answered 200 within {timeout:.0f}s:\n{proc.log_tail()}")


#: What the pods' secretKeyRef variables read from their Secrets here.
SECRETS = {"RAGPULSE_ALERTMANAGER__TOKEN": "12345"}


def _post_alert(port: int, token: str | None) -> int:
    body = json.dumps({"version": "4", "status": "firing", "alerts": []}).encode()
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    req = urllib.request.Request(f"http://127.0.0.1:{port}/alertmanager", body, headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("role", ["ingest", "judge"])
def test_rendered_pod_becomes_ready_and_stops_on_sigterm(
    role: str, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    port, webhook = free_port(), free_port()
    prefix = f"helm-{role}-{os.getpid()}"
    topics = {"spans": f"{prefix}.spans", "judge": f"{prefix}.judge", "deadletter": f"{prefix}.dead"}
    for topic in topics.values():
        kafka_broker.create_topic(topic)
    docs = render(
        *(
            "--set",
            f"kafka.bootstrapServers={kafka_broker.bootstrap}",
            "--set",
            "clickhouse.url=http://ch:8123",
        ),
        *("--set", f"metrics.port={port}", "--set", f"config.kafka.group_id={prefix}-ingest"),
        *("--set", f"config.kafka.judge_group_id={prefix}-judge"),
        *[a for kind, t in topics.items() for a in ("--set", f"config.kafka.{kind}_topic={t}")],
        *("--set", "alertmanagerWebhook.enabled=true", "--set", f"alertmanagerWebhook.port={webhook}"),
        *("--set", "alertmanagerWebhook.existingSecret=ragpulse-webhook"),
    )
    config = tmp_path / "collector.yaml"
    config.write_text(by_name(docs, "ConfigMap", "r-ragpulse")["data"]["collector.yaml"])
    deployment = by_name(docs, "Deployment", f"r-ragpulse-{role}")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env |= {
        e["name"]: SECRETS[e["name"]] for e in container["env"] if "secretKeyRef" in e.get("valueFrom", {})
    }
    env["RAGPULSE_STORAGE__DSN"] = f"chdb://{tmp_path / 'chdb'}"
    env["HOME"] = str(tmp_path)
    env["PATH"] = os.environ["PATH"]
    args = [str(config) if a == "/etc/ragpulse/config/collector.yaml" else a for a in container["args"]]
    proc = ManagedProcess(
        role, [sys.executable, "-m", "ragpulse.collector.cli", *args], tmp_path / "log", env
    )
    proc.start()
    try:
        assert container["ports"][0]["containerPort"] == port
        _wait_status(proc, port, container["livenessProbe"], timeout=90)
        _wait_status(proc, port, container["readinessProbe"], timeout=90)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        if role == "ingest":
            assert ports["alertmanager"] == webhook
            assert _post_alert(webhook, None) == 401
            assert _post_alert(webhook, "1234") == 401
            assert _post_alert(webhook, "12345") == 200
        else:
            assert "alertmanager" not in ports and "RAGPULSE_ALERTMANAGER__TOKEN" not in env
        os.kill(proc.pid, signal.SIGTERM)
        proc.proc.wait(timeout=pod["terminationGracePeriodSeconds"])
        assert proc.proc.returncode == 0, proc.log_tail()
    finally:
        proc.stop()
