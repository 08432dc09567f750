"""Write the mixin's files (rules, their promtool tests, dashboards) into a repository checkout."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .rule_tests import render_rule_tests
from .rules import render_rules, rule_documents

__all__ = ["render_all", "write_all"]


def render_all(config: Mapping[str, Any]) -> dict[str, str]:
    """Relative path -> text of every rendered file."""
    from .dashboards import render_dashboards

    out = {f"rules/{name}": text for name, text in render_rules(config).items()}
    out.update({f"rules/tests/{n}": t for n, t in render_rule_tests(config, rule_documents(config)).items()})
    out.update({f"dashboards/{n}": t for n, t in render_dashboards(config).items()})
    return out


def write_all(config: Mapping[str, Any], root: Path) -> list[Path]:
    """Render into ``root`` (creating rules/, rules/tests/ and dashboards/); returns the files written."""
    written = []
    for rel, text in render_all(config).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
