"""Vendor the JSON Schemas of the custom resources the chart renders.

The chart renders three kinds that are not built into Kubernetes: ServiceMonitor
and PrometheusRule (prometheus-operator) and ScaledObject (KEDA). The suite
validates them against the schemas their projects publish. This script takes
each CRD from its project's Go module (``go mod download -json``, served by the
Go module proxy, checksummed by the Go checksum database), converts the CRD's
``openAPIV3Schema`` to a JSON Schema (draft 2020-12) and writes it to
``tests/crd_schemas/`` with ``SOURCES.json`` naming module, version, module
checksum, the file inside the module and its sha256.

Conversion: OpenAPI's ``nullable: true`` becomes a ``"null"`` type; a Go (RE2) pattern
that sets a flag after its ``^`` anchor (``^(?i)...``) gets the flag moved to the front, where
Python's ``re`` requires it (same language); an object
with declared properties and neither ``x-kubernetes-preserve-unknown-fields``
nor ``additionalProperties`` gets ``additionalProperties: false``, which is what
the API server's strict field validation does with unknown fields.

Usage: ``python scripts/vendor_crd_schemas.py`` (needs ``go``; rerun after
changing a version below).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "crd_schemas"

# (module, version, path of the CRD inside the module, CRD version to take)
CRDS: list[tuple[str, str, str, str]] = [
    (
        "github.com/prometheus-operator/prometheus-operator",
        "v0.85.0",
        "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
        "v1",
    ),
    (
        "github.com/prometheus-operator/prometheus-operator",
        "v0.85.0",
        "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
        "v1",
    ),
    ("github.com/kedacore/keda/v2", "v2.21.0", "config/crd/bases/keda.sh_scaledobjects.yaml", "v1alpha1"),
]


def to_json_schema(node: Any) -> Any:
    """Convert one OpenAPI v3 (Kubernetes structural) schema node to JSON Schema."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: to_json_schema(value) for key, value in node.items() if key != "nullable"}
    pattern = out.get("pattern")
    if isinstance(pattern, str) and pattern.startswith("^(?i)"):
        out["pattern"] = "(?i)^" + pattern[len("^(?i)") :]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if (
        node.get("type") == "object"
        and "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def download(module: str, version: str, cache: Path) -> dict[str, Any]:
    """``go mod download -json`` into ``cache``; returns go's JSON answer (Dir, Sum, ...)."""
    env = dict(os.environ, GOMODCACHE=str(cache), GOFLAGS="-mod=mod")
    env.setdefault("GOPROXY", "https://proxy.golang.org")
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    info = json.loads(out.stdout or "{}")
    if out.returncode != 0 or "Error" in info:
        sys.exit(f"go mod download {module}@{version} failed: {info.get('Error') or out.stderr.strip()}")
    return info


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    sources: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="crd-vendor-") as tmp:
        for module, version, path, crd_version in CRDS:
            info = download(module, version, Path(tmp))
            raw = (Path(info["Dir"]) / path).read_bytes()
            crd = yaml.safe_load(raw)
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            served = {v["name"]: v for v in crd["spec"]["versions"]}
            schema = to_json_schema(served[crd_version]["schema"]["openAPIV3Schema"])
            schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
            name = f"{group}_{kind.lower()}_{crd_version}.json"
            (OUT / name).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
            sources.append(
                {
                    "schema": name,
                    "apiVersion": f"{group}/{crd_version}",
                    "kind": kind,
                    "module": module,
                    "version": version,
                    "module_sum": info["Sum"],
                    "file": path,
                    "file_sha256": hashlib.sha256(raw).hexdigest(),
                }
            )
            print(f"{name}: {kind} {group}/{crd_version} from {module}@{version}/{path}")
    (OUT / "SOURCES.json").write_text(json.dumps(sources, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
