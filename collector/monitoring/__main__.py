"""``python -m ragpulse.collector.monitoring render [--config FILE] [--overrides FILE] [--out DIR]``.

Writes rules/, rules/tests/ and dashboards/. ``--overrides`` merges a partial config onto
``--config``, e.g. the ``objectives.yaml`` of the helm chart's ConfigMap, which renders the
rules that release's PrometheusRule holds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from .config import ObjectivesError, load_objectives
from .render import write_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ragpulse.collector.monitoring", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser(
        "render", help="render rules/, rules/tests/ and dashboards/ from the objectives config"
    )
    render.add_argument("--config", type=Path, help="objectives YAML (default: the packaged objectives.yaml)")
    render.add_argument(
        "--overrides",
        type=Path,
        help="YAML merged onto the config (e.g. {objectives: {faithfulness: {objective: 0.98}}})",
    )
    render.add_argument(
        "--out", type=Path, default=Path("."), help="repository root to write into (default: .)"
    )
    args = parser.parse_args(argv)
    try:
        overrides = yaml.safe_load(args.overrides.read_text(encoding="utf-8")) if args.overrides else None
        config = load_objectives(args.config, overrides)
    except (ObjectivesError, OSError, yaml.YAMLError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in write_all(config, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
