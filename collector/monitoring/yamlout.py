"""Deterministic YAML for the rendered mixin files: keys in insertion order, multi-line strings as blocks."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["dump_yaml", "HEADER"]

#: First line of every rendered file, so nobody edits one by hand.
HEADER = "# Rendered from collector/monitoring/objectives.yaml by `python -m ragpulse.collector.monitoring render`; do not edit.\n"


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (PromQL expressions) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    """``data`` as YAML text with the rendered-file header."""
    body = yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, width=1000, allow_unicode=True, default_flow_style=False
    )
    return HEADER + body
