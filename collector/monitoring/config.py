"""Loading and checking the mixin's objectives config (``objectives.yaml``).

The packaged ``objectives.yaml`` is the default; a caller may pass another
file or overrides (dicts merge key by key, lists and scalars replace), which
is how the end-to-end test renders the same rules with test-sized windows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..config import merge

__all__ = [
    "ObjectivesError",
    "config_section",
    "load_objectives",
    "duration_seconds",
    "error_budget",
]

_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d|w|y)$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_REQUIRED = (
    "links",
    "collector_selector",
    "record_windows",
    "burn_windows",
    "objectives",
    "score_drop",
    "pipeline",
)


class ObjectivesError(ValueError):
    """The objectives config is malformed or contradicts itself."""


def duration_seconds(text: str) -> float:
    """Seconds in a single-unit Prometheus duration such as ``5m``, ``3d`` or ``0m``."""
    m = _DURATION.match(str(text))
    if not m:
        raise ObjectivesError(f"not a Prometheus duration: {text!r} (use one unit, e.g. 5m, 6h, 3d)")
    return int(m.group(1)) * _UNIT_S[m.group(2)]


def config_section(
    config: Mapping[str, Any], name: str, keys: tuple[str, ...], durations: tuple[str, ...]
) -> Mapping[str, Any]:
    """The ``name`` section of the config, checked: a mapping with each of ``keys``, a
    Prometheus duration at each of ``durations`` (:class:`ObjectivesError` names the problem)."""
    section = config.get(name)
    if not isinstance(section, Mapping):
        raise ObjectivesError(f"objectives config lacks {name}")
    for key in keys:
        if key not in section:
            raise ObjectivesError(f"{name} lacks {key}")
    for key in durations:
        duration_seconds(section[key])
    return section


def error_budget(objective: Mapping[str, Any]) -> float:
    """The allowed bad-event share of a quality objective (1 - objective), rounded to kill float noise."""
    return round(1.0 - float(objective["objective"]), 10)


def load_objectives(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The config at ``path`` (default: the packaged objectives.yaml) with ``overrides``, checked."""
    if path is None:
        text = resources.files(__package__).joinpath("objectives.yaml").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    config = yaml.safe_load(text)
    if not isinstance(config, dict):
        raise ObjectivesError("the objectives config must be a mapping")
    if overrides:
        config = merge(config, overrides)
    check(config)
    return config


def check(config: Mapping[str, Any]) -> None:
    """Raise :class:`ObjectivesError` on a missing key, a bad duration or an alert that cannot fire."""
    missing = [k for k in _REQUIRED if k not in config]
    if missing:
        raise ObjectivesError(f"objectives config lacks {', '.join(missing)}")
    for w in config["record_windows"]:
        duration_seconds(w)
    windows = set(config["record_windows"])
    for bw in config["burn_windows"]:
        for key in ("name", "severity", "long", "short", "factor", "for", "min_judged"):
            if key not in bw:
                raise ObjectivesError(f"burn window {bw.get('name', '?')} lacks {key}")
        for key in ("long", "short"):
            if bw[key] not in windows:
                raise ObjectivesError(f"burn window {bw['name']}: {bw[key]} is not in record_windows")
        if duration_seconds(bw["short"]) >= duration_seconds(bw["long"]):
            raise ObjectivesError(f"burn window {bw['name']}: short must be shorter than long")
        duration_seconds(bw["for"])
    names = set()
    for name, obj in config["objectives"].items():
        for key in ("alert", "title", "description", "bad", "total", "objective"):
            if key not in obj:
                raise ObjectivesError(f"objective {name} lacks {key}")
        if obj["alert"] in names:
            raise ObjectivesError(f"alert name {obj['alert']} is used twice")
        names.add(obj["alert"])
        if not 0.0 < float(obj["objective"]) < 1.0:
            raise ObjectivesError(f"objective {name}: objective must lie strictly between 0 and 1")
        for bw in config["burn_windows"]:
            if error_budget(obj) * float(bw["factor"]) >= 1.0:
                raise ObjectivesError(
                    f"objective {name}: budget {error_budget(obj):g} x factor {bw['factor']} >= 1, "
                    f"so burn window {bw['name']} could never fire"
                )
    sd = config["score_drop"]
    for key in ("window", "offset", "for"):
        duration_seconds(sd[key])
    for name, section in config["pipeline"].items():
        for key in ("window", "for"):
            if key in section:
                duration_seconds(section[key])
        if "for" not in section:
            raise ObjectivesError(f"pipeline.{name} lacks for")
