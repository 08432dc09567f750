"""Render helm/ragpulse with the cached helm binary and validate what comes out.

Shared by the chart tests: ``render`` runs ``helm template`` (cached per value
set, since helm takes ~0.3 s a call) and returns the manifests as dicts;
``validate`` checks one manifest against the pinned Kubernetes version's
OpenAPI schemas (kubernetes-validate, strict: unknown fields are errors) or,
for the custom resources the chart renders, against the CRD schemas vendored
in tests/crd_schemas/ (scripts/vendor_crd_schemas.py).
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.services import helm_binary

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "helm" / "ragpulse"
CI_VALUES = CHART / "ci"
CRD_SCHEMAS = Path(__file__).resolve().parent / "crd_schemas"
# The Kubernetes version the manifests are rendered for and validated against.
KUBE_VERSION = "1.34.0"
MINIMAL = ("--set", "kafka.bootstrapServers=kafka:9092", "--set", "clickhouse.url=http://clickhouse:8123")


class HelmError(RuntimeError):
    """helm exited non-zero; the message is its output (lint reports on stdout, the rest on stderr)."""


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the cached helm binary; HelmError with stderr when it fails."""
    out = subprocess.run([helm_binary(), *args], capture_output=True, text=True, timeout=120, check=False)
    if out.returncode != 0:
        raise HelmError((out.stdout + out.stderr).strip())
    return out


def values_file(name: str) -> str:
    """Path of a value set in helm/ragpulse/ci/ (``minimal``, ``production``, ``off``)."""
    return str(CI_VALUES / f"{name}-values.yaml")


@functools.lru_cache(maxsize=64)
def _render(args: tuple[str, ...]) -> str:
    return helm(
        "template", "r", str(CHART), "--namespace", "rp", "--kube-version", KUBE_VERSION, *args
    ).stdout


def render(*args: str) -> list[dict[str, Any]]:
    """The manifests ``helm template`` renders with these extra arguments (fresh copies)."""
    return [doc for doc in yaml.safe_load_all(_render(tuple(args))) if doc]


def render_set(name: str, *args: str) -> list[dict[str, Any]]:
    """Render one ci/ value set plus extra arguments."""
    return render("-f", values_file(name), *args)


def of_kind(docs: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def by_name(docs: Sequence[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in of_kind(docs, kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} rendered"
    return found[0]


def pod_specs(docs: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(kind/name, pod spec) of every workload: Deployments, Jobs, CronJobs."""
    out = []
    for d in docs:
        spec = d.get("spec", {})
        if d["kind"] in ("Deployment", "Job"):
            out.append((f"{d['kind']}/{d['metadata']['name']}", spec["template"]["spec"]))
        elif d["kind"] == "CronJob":
            out.append((f"CronJob/{d['metadata']['name']}", spec["jobTemplate"]["spec"]["template"]["spec"]))
    return out


@functools.lru_cache(maxsize=1)
def _crd_validators() -> dict[tuple[str, str], jsonschema.protocols.Validator]:
    """(apiVersion, kind) -> validator for every vendored CRD schema."""
    out = {}
    for src in json.loads((CRD_SCHEMAS / "SOURCES.json").read_text()):
        schema = json.loads((CRD_SCHEMAS / src["schema"]).read_text())
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        out[(src["apiVersion"], src["kind"])] = cls(schema)
    return out


def validate(doc: dict[str, Any]) -> None:
    """Raise if ``doc`` is not a valid object of its kind (vendored CRD schema or built-in kind)."""
    crd = _crd_validators().get((doc["apiVersion"], doc["kind"]))
    if crd is not None:
        crd.validate(doc)
        return
    import kubernetes_validate

    kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
