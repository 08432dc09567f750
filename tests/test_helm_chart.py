"""helm/ragpulse: lint, schema errors, every rendered manifest valid, each toggle, security.

Rendering goes through the cached helm binary (tests/helm_chart.py); manifests are
validated against the pinned Kubernetes version's schemas and the vendored CRD schemas.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm_chart import (
    CHART,
    KUBE_VERSION,
    MINIMAL,
    HelmError,
    by_name,
    helm,
    of_kind,
    pod_specs,
    render,
    render_set,
    validate,
    values_file,
)

VALUE_SETS = ["minimal", "production", "off"]
RAGPULSE = str(Path(sys.executable).parent / "ragpulse")  # the installed entry point
# Extra combinations beyond the ci/ files, each rendered and validated like them.
VARIANTS: dict[str, tuple[str, ...]] = {
    "judge-hpa": ("--set", "judge.autoscaling.enabled=true"),
    "ingest-only": ("--set", "judge.enabled=false", "--set", "receiver.enabled=true"),
    "judge-only": ("--set", "ingest.enabled=false", "--set", "judge.keda.enabled=true"),
    "export-existing-claim": (
        "--set",
        "export.enabled=true",
        "--set",
        "export.persistence.existingClaim=evalsets",
        "--set-json",
        'export.criteria={"reasons":["failure_mode:generation"]}',
    ),
    "mtls": (
        "--set",
        "kafka.securityProtocol=SSL",
        "--set",
        "kafka.tls.existingSecret=kafka-user-tls",
        "--set",
        "kafka.tls.certKey=user.crt",
        "--set",
        "kafka.tls.keyKey=user.key",
    ),
}


def all_renders() -> list[tuple[str, list[dict[str, Any]]]]:
    out = [(name, render_set(name)) for name in VALUE_SETS]
    out += [(name, render_set("minimal", *args)) for name, args in VARIANTS.items()]
    return out


# -- lint and values schema


@pytest.mark.parametrize("name", VALUE_SETS)
def test_lint_strict(name: str) -> None:
    out = helm("lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION, "-f", values_file(name))
    assert "0 chart(s) failed" in out.stdout


def test_defaults_alone_fail_with_the_missing_addresses() -> None:
    """Kafka and ClickHouse have no default: a bare install says which values are missing."""
    with pytest.raises(HelmError) as err:
        helm("lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION)
    assert "/kafka/bootstrapServers" in str(err.value)
    assert "/clickhouse/url" in str(err.value)


SCHEMA_ERRORS = [
    (("--set", "kafka.bootstrapServers=kafka"), "/kafka/bootstrapServers"),
    (("--set", "kafka.bootstrapServer=kafka:9092"), "'bootstrapServer' not allowed"),
    (("--set", "clickhouse.url=http://default:pw@ch:8123"), "/clickhouse/url"),
    (("--set", "clickhouse.url=ch:8123"), "/clickhouse/url"),
    (("--set", "securityContext.runAsUser=0"), "/securityContext/runAsUser"),
    (("--set", "config.sampling.rate=2"), "/config/sampling/rate"),
    (("--set", "config.storage.dsn=http://x:8123"), "'dsn' not allowed"),
    (("--set", "config.metrics.port=1"), "'metrics' not allowed"),
    (("--set", "config.judge.enabled=false"), "'enabled' not allowed"),
    (("--set", "config.sampling.rules[0].action=sometimes"), "/config/sampling/rules/0"),
    (("--set", "kafka.securityProtocol=SASL"), "/kafka/securityProtocol"),
    (("--set", "kafka.sasl.passwordKey="), "/kafka/sasl/passwordKey"),
    (("--set", "export.holdout=1.5"), "/export/holdout"),
    (("--set", "export.stateDir=/etc"), "/export/stateDir"),
    (("--set", "export.since=7d"), "'since' not allowed"),
    (("--set", "judge.keda.lagThreshold=0"), "/judge/keda/lagThreshold"),
    (("--set", "ingest.resources.request.cpu=1"), "'request' not allowed"),
    (("--set-json", "objectives.faithfulness=0.9"), "/objectives/faithfulness"),
    (("--set-json", "objectives.hallucination=1"), "/objectives/hallucination"),
    (("--set", "objectives.faithfulness=0.98"), "got string, want number"),
    (("--set-json", "objectives.faithfulnes=0.98"), "'faithfulnes' not allowed"),
]


@pytest.mark.parametrize(("args", "expected"), SCHEMA_ERRORS, ids=[e for _, e in SCHEMA_ERRORS])
def test_values_schema_names_the_bad_value(args: tuple[str, ...], expected: str) -> None:
    with pytest.raises(HelmError) as err:
        render(*MINIMAL, *args)
    assert expected in str(err.value)


TEMPLATE_ERRORS = [
    (("--set", "config.shutdown.grace_s=30"), "must be below terminationGracePeriodSeconds"),
    (("--set", "kafka.securityProtocol=SASL_SSL"), "needs kafka.sasl.existingSecret"),
    (("--set", "kafka.tls.existingSecret=t", "--set", "kafka.tls.certKey=c"), "go together"),
    (
        ("--set", "ingest.autoscaling.enabled=true", "--set", "ingest.resources.requests.cpu=null"),
        "needs ingest.resources.requests.cpu",
    ),
]


@pytest.mark.parametrize(("args", "expected"), TEMPLATE_ERRORS, ids=[e for _, e in TEMPLATE_ERRORS])
def test_inconsistent_values_fail_with_a_reason(args: tuple[str, ...], expected: str) -> None:
    with pytest.raises(HelmError) as err:
        render(*MINIMAL, *args)
    assert expected in str(err.value)


def test_values_schema_covers_every_value() -> None:
    """Every key of values.yaml is declared in values.schema.json (which refuses unknown keys)."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def walk(value: Any, node: dict[str, Any], path: str) -> None:
        if isinstance(value, dict) and value:
            assert node.get("additionalProperties") is False or path.endswith(
                ("Annotations", "annotations", "labels", "nodeSelector", "affinity", "settings", "criteria")
            ), f"{path or 'values'} accepts unknown keys"
            for key, sub in value.items():
                props = node.get("properties", {})
                assert key in props, f"{path}.{key} is not in values.schema.json"
                walk(sub, props[key], f"{path}.{key}")

    walk(values, schema, "")


def _collector_schema() -> dict[str, dict[str, Any]]:
    from ragpulse.collector import config

    return config._SCHEMA


# Collector settings the chart sets itself, from its own values.
CHART_OWNED = {
    "kafka": {"bootstrap_servers", "security"},
    "storage": {"dsn"},
    "metrics": {"host", "port", "stall_s"},
    "receiver": {"enabled", "host", "port", "read_timeout_s", "grpc_enabled", "grpc_port"},
    "alertmanager": {"enabled", "host", "port", "lookback_s"},
    "judge": {"enabled"},
}
# Collector settings that are secrets: never a value, only an environment variable from a Secret
# (valueFrom.secretKeyRef of the Secret the values name, e.g. RAGPULSE_ALERTMANAGER__TOKEN).
SECRET_ONLY = {
    "alertmanager": {"token"},
    "receiver": {"auth_token", "auth_token_file"},
}
JSON_TYPES = {str: {"string"}, int: {"integer"}, float: {"number"}, bool: {"boolean"}, dict: {"object"}}
JSON_TYPES.update({list: {"array"}, type(None): {"null"}})


def test_config_schema_matches_the_collector() -> None:
    """values.config takes exactly the collector's settings the chart does not own, with its types."""
    config = json.loads((CHART / "values.schema.json").read_text())["properties"]["config"]["properties"]
    collector = _collector_schema()
    for section, keys in collector.items():
        chart_keys = set(config.get(section, {}).get("properties", {}))
        not_values = CHART_OWNED.get(section, set()) | SECRET_ONLY.get(section, set())
        assert chart_keys == set(keys) - not_values, section
        for key in chart_keys:
            want = keys[key] if isinstance(keys[key], tuple) else (keys[key],)
            expected = set().union(*(JSON_TYPES[t] for t in want))
            if expected == {"integer", "number"}:
                expected = {"number"}
            declared = config[section]["properties"][key]["type"]
            assert set(declared if isinstance(declared, list) else [declared]) == expected, f"{section}.{key}"
    assert set(config) <= set(collector)


# -- every manifest validates


def test_every_rendered_manifest_validates() -> None:
    for name, docs in all_renders():
        for doc in docs:
            try:
                validate(doc)
            except Exception as exc:  # noqa: BLE001 - reported with the object's name
                pytest.fail(f"{name}: {doc['kind']}/{doc['metadata']['name']}: {str(exc).splitlines()[0]}")


def test_validation_catches_an_invalid_manifest() -> None:
    """The validators reject unknown fields and wrong types, for built-in kinds and CRDs alike."""
    docs = render_set("production")
    deployment = of_kind(docs, "Deployment")[0]
    deployment["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFS"] = True
    monitor = of_kind(docs, "ServiceMonitor")[0]
    monitor["spec"]["endpoints"][0]["intervall"] = "30s"
    scaled = of_kind(docs, "ScaledObject")[0]
    scaled["spec"]["maxReplicaCount"] = "eight"
    for doc in (deployment, monitor, scaled):
        with pytest.raises(Exception, match="readOnlyRootFS|intervall|eight"):
            validate(doc)


# -- the collector accepts what the chart renders


def _container(doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc["spec"]
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]["containers"][0]


def _env(doc: dict[str, Any], password: str = "s3cret") -> dict[str, str]:
    """The container's plain env values, with Kubernetes' $(VAR) expansion of earlier entries."""
    env: dict[str, str] = {}
    for item in _container(doc)["env"]:
        if "valueFrom" in item:
            env[item["name"]] = password
        else:
            env[item["name"]] = re.sub(
                r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), item["value"]
            )
    return env


@pytest.mark.parametrize("name", VALUE_SETS)
def test_collector_accepts_the_rendered_config(name: str, tmp_path: Path) -> None:
    """`ragpulse collect --check` (the collector's own validation) passes on the ConfigMap and env."""
    docs = render_set(name)
    config = tmp_path / "collector.yaml"
    config.write_text(by_name(docs, "ConfigMap", "r-ragpulse")["data"]["collector.yaml"])
    deployment = by_name(docs, "Deployment", "r-ragpulse-ingest")
    args = _container(deployment)["args"]
    assert args[:3] == ["collect", "--config", "/etc/ragpulse/config/collector.yaml"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")} | _env(deployment)
    out = subprocess.run(
        [sys.executable, "-m", "ragpulse.collector.cli", "collect", "--config", str(config), "--check"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    from ragpulse.collector.config import load_config

    cfg = load_config(config, env=_env(deployment))
    url = yaml.safe_load(Path(values_file(name)).read_text())["clickhouse"]["url"]
    scheme, host = url.rstrip("/").split("://")
    assert re.fullmatch(f"{scheme}://[^:]+:(s3cret)?@{re.escape(host)}", cfg["storage"]["dsn"])
    assert cfg["metrics"]["host"] == "0.0.0.0"


def test_rendered_commands_parse_with_the_real_cli() -> None:
    """Every container's args are accepted by the `ragpulse` argument parser."""
    from ragpulse.collector.cli.main import build_parser

    docs = render_set("production")
    for doc in of_kind(docs, "Deployment") + of_kind(docs, "Job"):
        args = _container(doc)["args"]
        parsed = build_parser().parse_args(args)
        assert parsed.command == args[0]
        if doc["kind"] == "Deployment":
            assert parsed.role == doc["metadata"]["labels"]["app.kubernetes.io/component"]
    export = _container(by_name(docs, "CronJob", "r-ragpulse-export"))["args"]
    parsed = build_parser().parse_args(
        [a.replace("$(RAGPULSE_STORAGE__DSN)", "http://ch:8123") for a in export]
    )
    assert parsed.schedule == "weekly" and parsed.state == "/data/export-state"


def test_app_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    # The installed (editable) distribution's version is pyproject.toml's.
    version = importlib.metadata.version("ragpulse")
    assert chart["appVersion"] == version
    image = _container(by_name(render_set("minimal"), "Deployment", "r-ragpulse-ingest"))["image"]
    assert image == f"ragpulse:{version}"


# -- security


def test_no_pod_runs_as_root_or_keeps_a_capability() -> None:
    for name, docs in all_renders():
        for where, pod in pod_specs(docs):
            ctx = pod["securityContext"]
            assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] > 0, f"{name} {where}"
            assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}, f"{name} {where}"
            assert pod["automountServiceAccountToken"] is False, f"{name} {where}"
            assert not any("hostPath" in v for v in pod.get("volumes", [])), f"{name} {where}"
            assert not pod.get("hostNetwork") and not pod.get("hostPID"), f"{name} {where}"
            for container in pod["containers"] + pod.get("initContainers", []):
                sc = container["securityContext"]
                label = f"{name} {where} {container['name']}"
                assert sc["readOnlyRootFilesystem"] is True, label
                assert sc["allowPrivilegeEscalation"] is False and sc["privileged"] is False, label
                assert sc["capabilities"] == {"drop": ["ALL"]}, label
                assert sc["runAsNonRoot"] is True, label


def test_no_secret_values_are_rendered() -> None:
    """No Secret objects; credentials reach the pods only through secretKeyRef / secretRef."""
    for name, docs in all_renders():
        assert not of_kind(docs, "Secret"), name
        for doc in docs:
            if doc["kind"] not in ("Deployment", "Job", "CronJob"):
                continue
            for item in _container(doc)["env"]:
                if re.search("PASSWORD|TOKEN|API_KEY|SECRET", item["name"]):
                    assert "secretKeyRef" in item.get("valueFrom", {}), f"{name} {item['name']}"
                if item["name"] == "RAGPULSE_STORAGE__DSN":
                    user_info = item["value"].split("//", 1)[1].split("@", 1)[0]
                    assert user_info.split(":", 1)[1] in ("", "$(RAGPULSE_CLICKHOUSE_PASSWORD)"), name
    production = render_set("production")
    judge = _container(by_name(production, "Deployment", "r-ragpulse-judge"))
    assert judge["envFrom"] == [{"secretRef": {"name": "ragpulse-llm-keys"}}]
    assert "envFrom" not in _container(by_name(production, "Deployment", "r-ragpulse-ingest"))


# -- toggles


def test_optional_objects_off() -> None:
    off = render_set("off")
    for kind in ("HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy", "CronJob", "Job"):
        assert not of_kind(off, kind), kind
    assert not of_kind(off, "ServiceAccount")


def test_service_monitor_scrapes_the_metrics_service() -> None:
    docs = render_set("production")
    monitor = of_kind(docs, "ServiceMonitor")[0]
    service = by_name(docs, "Service", "r-ragpulse-metrics")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"] == "metrics"
    for role in ("ingest", "judge"):
        labels = by_name(docs, "Deployment", f"r-ragpulse-{role}")["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items(), role


def test_keda_replaces_the_judge_hpa() -> None:
    docs = render_set("production")
    scaled = of_kind(docs, "ScaledObject")[0]
    judge = by_name(docs, "Deployment", "r-ragpulse-judge")
    assert scaled["spec"]["scaleTargetRef"]["name"] == judge["metadata"]["name"]
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "kafka"
    assert trigger["metadata"]["consumerGroup"] == "ragpulse-judge"
    assert trigger["metadata"]["topic"] == "ragpulse.judge"
    assert trigger["metadata"]["lagThreshold"] == "100"
    assert trigger["authenticationRef"] == {"name": "ragpulse-kafka-trigger-auth"}
    assert "replicas" not in judge["spec"]
    assert [h["metadata"]["name"] for h in of_kind(docs, "HorizontalPodAutoscaler")] == ["r-ragpulse-ingest"]


def test_hpa_per_role() -> None:
    docs = render_set("minimal", *VARIANTS["judge-hpa"])
    hpas = {h["spec"]["scaleTargetRef"]["name"]: h for h in of_kind(docs, "HorizontalPodAutoscaler")}
    assert set(hpas) == {"r-ragpulse-judge"}
    assert "replicas" not in by_name(docs, "Deployment", "r-ragpulse-judge")["spec"]
    assert by_name(docs, "Deployment", "r-ragpulse-ingest")["spec"]["replicas"] == 2
    metric = hpas["r-ragpulse-judge"]["spec"]["metrics"][0]["resource"]
    assert metric == {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}


def test_roles_toggle_their_own_objects() -> None:
    docs = render_set("minimal", *VARIANTS["ingest-only"])
    assert [d["metadata"]["name"] for d in of_kind(docs, "Deployment")] == ["r-ragpulse-ingest"]
    assert [d["metadata"]["name"] for d in of_kind(docs, "PodDisruptionBudget")] == ["r-ragpulse-ingest"]
    intake = by_name(docs, "Service", "r-ragpulse-intake")
    assert intake["spec"]["selector"]["app.kubernetes.io/component"] == "ingest"
    ports = _container(by_name(docs, "Deployment", "r-ragpulse-ingest"))["ports"]
    assert {"name": "otlp-http", "containerPort": 4320, "protocol": "TCP"} in ports
    assert {"name": "otlp-grpc", "containerPort": 4317, "protocol": "TCP"} not in ports
    assert [p["name"] for p in intake["spec"]["ports"]] == ["otlp-http"]
    grpc_only = render_set("minimal", "--set", "receiver.grpc.enabled=true")
    intake = by_name(grpc_only, "Service", "r-ragpulse-intake")
    assert intake["spec"]["ports"] == [
        {
            "name": "otlp-grpc",
            "port": 4317,
            "targetPort": "otlp-grpc",
            "protocol": "TCP",
            "appProtocol": "grpc",
        }
    ]
    ports = _container(by_name(grpc_only, "Deployment", "r-ragpulse-ingest"))["ports"]
    assert {"name": "otlp-grpc", "containerPort": 4317, "protocol": "TCP"} in ports
    cfg = yaml.safe_load(by_name(grpc_only, "ConfigMap", "r-ragpulse")["data"]["collector.yaml"])["receiver"]
    assert (cfg["enabled"], cfg["grpc_enabled"], cfg["grpc_port"]) == (False, True, 4317)
    docs = render_set("minimal", *VARIANTS["judge-only"])
    assert [d["metadata"]["name"] for d in of_kind(docs, "Deployment")] == ["r-ragpulse-judge"]
    assert not [s for s in of_kind(docs, "Service") if s["metadata"]["name"].endswith("intake")]


def test_deployments_probe_health_and_spread() -> None:
    docs = render_set("production")
    for role in ("ingest", "judge"):
        deployment = by_name(docs, "Deployment", f"r-ragpulse-{role}")
        container = _container(deployment)
        assert container["args"][-2:] == ["--role", role]
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
        assert deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0
        spec = deployment["spec"]["template"]["spec"]
        for constraint in spec["topologySpreadConstraints"]:
            assert constraint["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == role
    ingest = by_name(docs, "Deployment", "r-ragpulse-ingest")["spec"]["template"]["spec"]
    assert [c["topologyKey"] for c in ingest["topologySpreadConstraints"]] == [
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
    ]
    assert ingest["terminationGracePeriodSeconds"] == 45


def test_schema_hook_job() -> None:
    job = of_kind(render_set("minimal"), "Job")[0]
    notes = job["metadata"]["annotations"]
    assert notes["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert notes["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    assert job["spec"]["activeDeadlineSeconds"] == 300
    assert _container(job)["args"] == ["schema", "apply", "--ttl-days", "90"]
    pod = job["spec"]["template"]["spec"]
    # A pre-install hook runs before the release's ConfigMap and ServiceAccount exist.
    assert pod["serviceAccountName"] == "default"
    assert [v["name"] for v in pod["volumes"]] == ["tmp"]


def test_export_cronjob_and_its_volume() -> None:
    docs = render_set("production")
    cron = of_kind(docs, "CronJob")[0]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron["spec"]["schedule"] == "0 3 * * 1"
    assert cron["spec"]["successfulJobsHistoryLimit"] == 3 and cron["spec"]["failedJobsHistoryLimit"] == 3
    args = _container(cron)["args"]
    assert args == [
        "export",
        "--schedule",
        "weekly",
        "--state",
        "/data/export-state",
        "-o",
        "/data/evalset.jsonl",
        "--holdout",
        "0.2",
        "--max-per-reason",
        "50",
        "--db",
        "$(RAGPULSE_STORAGE__DSN)",
    ]
    claim = of_kind(docs, "PersistentVolumeClaim")[0]
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    volumes = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}} in volumes

    docs = render_set("minimal", *VARIANTS["export-existing-claim"])
    assert not of_kind(docs, "PersistentVolumeClaim")
    cron = of_kind(docs, "CronJob")[0]
    volumes = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "evalsets"}} in volumes
    args = _container(cron)["args"]
    assert args[args.index("--criteria") + 1] == "/etc/ragpulse/config/export-criteria.yaml"
    criteria = yaml.safe_load(by_name(docs, "ConfigMap", "r-ragpulse")["data"]["export-criteria.yaml"])
    assert criteria == {"reasons": ["failure_mode:generation"]}
    assert not of_kind(render_set("minimal"), "CronJob")


def test_export_cronjob_args_catch_up_missed_weeks(tmp_path: Path) -> None:
    """The CronJob's exact args, /data mapped to a scratch dir and a chDB store: state on the volume.

    The first run exports the last completed week and records it; a rerun in the same week adds
    nothing; with the state set back three weeks, the next run exports those three weeks.
    """
    (cron,) = of_kind(render_set("production"), "CronJob")
    data = tmp_path / "data"
    args = [a.replace("/data/", f"{data}/") for a in _container(cron)["args"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}

    def export() -> str:
        argv = [a.replace("$(RAGPULSE_STORAGE__DSN)", db) for a in args]
        run = subprocess.run([RAGPULSE, *argv], capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, run.stderr
        return run.stdout + run.stderr

    db = f"chdb://{tmp_path / 'db'}"
    subprocess.run(
        [RAGPULSE, "schema", "apply", "--dsn", db], check=True, capture_output=True, env=env, timeout=300
    )
    state_file = data / "export-state" / "export-state.json"
    assert export().count("exporting ") == 1
    state = json.loads(state_file.read_text())
    assert len(state["runs"]) == 1
    assert "no completed week to export since the last run" in export()
    week = 7 * 86_400 * 1_000_000_000
    state["last_until_ns"] -= 3 * week
    state_file.write_text(json.dumps(state))
    assert export().count("exporting ") == 3
    assert json.loads(state_file.read_text())["last_until_ns"] == state["last_until_ns"] + 3 * week


def _token_only_on_ingest(
    docs: list[dict[str, Any]], variable: str, secret: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``variable`` is set on the ingest pods from key ``token`` of Secret ``secret`` and absent
    from the judge pods; returns (ingest container, judge container)."""
    ingest = _container(by_name(docs, "Deployment", "r-ragpulse-ingest"))
    token = [e for e in ingest["env"] if e["name"] == variable]
    assert token == [{"name": variable, "valueFrom": {"secretKeyRef": {"name": secret, "key": "token"}}}]
    judge = _container(by_name(docs, "Deployment", "r-ragpulse-judge"))
    assert all(e["name"] != variable for e in judge["env"])
    return ingest, judge


def test_alertmanager_webhook_port_service_policy_and_token() -> None:
    """The webhook runs on the ingest pods: its port, Service, NetworkPolicy rule and token Secret."""
    docs = render_set("production")
    cfg = yaml.safe_load(by_name(docs, "ConfigMap", "r-ragpulse")["data"]["collector.yaml"])
    assert cfg["alertmanager"] == {"enabled": True, "host": "0.0.0.0", "port": 9465, "lookback_s": 3600}
    ingest, judge = _token_only_on_ingest(docs, "RAGPULSE_ALERTMANAGER__TOKEN", "ragpulse-webhook-token")
    assert {"name": "alertmanager", "containerPort": 9465, "protocol": "TCP"} in ingest["ports"]
    assert all(p["name"] != "alertmanager" for p in judge["ports"])
    service = by_name(docs, "Service", "r-ragpulse-alertmanager")
    assert service["spec"]["ports"] == [
        {"name": "alertmanager", "port": 9465, "targetPort": "alertmanager", "protocol": "TCP"}
    ]
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "ingest"
    (policy,) = of_kind(docs, "NetworkPolicy")
    rule = [
        r for r in policy["spec"]["ingress"] if r["ports"] == [{"port": "alertmanager", "protocol": "TCP"}]
    ]
    assert rule and rule[0]["from"][0]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/name": "alertmanager"}
    }

    docs = render_set("minimal")
    cfg = yaml.safe_load(by_name(docs, "ConfigMap", "r-ragpulse")["data"]["collector.yaml"])
    assert cfg["alertmanager"]["enabled"] is False
    assert not [s for s in of_kind(docs, "Service") if s["metadata"]["name"].endswith("-alertmanager")]
    no_token = render_set("minimal", "--set", "alertmanagerWebhook.enabled=true")
    ingest = _container(by_name(no_token, "Deployment", "r-ragpulse-ingest"))
    assert all(e["name"] != "RAGPULSE_ALERTMANAGER__TOKEN" for e in ingest["env"])


def test_intake_token_only_from_a_secret_on_the_ingest_pods() -> None:
    args = ("--set", "receiver.enabled=true", "--set", "receiver.existingSecret=ragpulse-intake")
    docs = render_set("minimal", *args)
    _token_only_on_ingest(docs, "RAGPULSE_RECEIVER__AUTH_TOKEN", "ragpulse-intake")
    cfg = yaml.safe_load(by_name(docs, "ConfigMap", "r-ragpulse")["data"]["collector.yaml"])
    assert "auth_token" not in cfg["receiver"]
    off = _container(by_name(render_set("minimal", args[2], args[3]), "Deployment", "r-ragpulse-ingest"))
    assert all(e["name"] != "RAGPULSE_RECEIVER__AUTH_TOKEN" for e in off["env"])  # no receiver, no token


def test_kafka_security_settings() -> None:
    docs = render_set("production")
    security = yaml.safe_load(by_name(docs, "ConfigMap", "r-ragpulse")["data"]["collector.yaml"])["kafka"]
    assert security["security"] == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "ssl_cafile": "/etc/ragpulse/kafka-tls/ca.crt",
    }
    env = {e["name"]: e for e in _container(by_name(docs, "Deployment", "r-ragpulse-ingest"))["env"]}
    ref = env["RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_PASSWORD"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "ragpulse", "key": "password"}
    # Strimzi's user Secret holds no user name: it comes from the values.
    assert env["RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_USERNAME"] == {
        "name": "RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_USERNAME",
        "value": "ragpulse",
    }
    docs = render_set("minimal", *VARIANTS["mtls"])
    security = yaml.safe_load(by_name(docs, "ConfigMap", "r-ragpulse")["data"]["collector.yaml"])["kafka"]
    assert security["security"]["ssl_certfile"] == "/etc/ragpulse/kafka-tls/user.crt"
    assert security["security"]["ssl_keyfile"] == "/etc/ragpulse/kafka-tls/user.key"


def test_network_policy_allows_only_the_named_peers() -> None:
    policy = of_kind(render_set("production"), "NetworkPolicy")[0]["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    egress_ports = [sorted((p["port"], p["protocol"]) for p in rule["ports"]) for rule in policy["egress"]]
    assert egress_ports == [[(53, "TCP"), (53, "UDP")], [(9093, "TCP")], [(8443, "TCP")], [(443, "TCP")]]
    assert all(rule.get("to") for rule in policy["egress"])
    assert [[p["port"] for p in r["ports"]] for r in policy["ingress"]] == [
        ["metrics"],
        ["otlp-http", "otlp-grpc"],
        ["alertmanager"],
    ]
    minimal = of_kind(render_set("minimal", "--set", "networkPolicy.enabled=true"), "NetworkPolicy")[0]
    assert len(minimal["spec"]["egress"]) == 3  # no LLM egress unless asked for
    assert len(minimal["spec"]["ingress"]) == 1  # no intake without the receiver, no webhook unless enabled
