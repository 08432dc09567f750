"""The ``ragpulse`` entry points: help, and one-line errors with exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ragpulse.collector.cli.main import COMMAND_MODULES, build_parser

RAGPULSE = str(Path(sys.executable).with_name("ragpulse"))


def test_every_registered_command_has_help() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    assert len(subparsers.choices) >= len(COMMAND_MODULES)
    for name in subparsers.choices:
        out = subprocess.run([RAGPULSE, name, "--help"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (name, out.stderr)
        assert "usage: ragpulse" in out.stdout


@pytest.mark.parametrize(
    "argv",
    [[RAGPULSE], [sys.executable, "-m", "ragpulse.collector.cli"]],
    ids=["console-script", "python-m"],
)
def test_user_errors_are_one_line_and_exit_2(argv: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    out = subprocess.run([*argv, "judge", str(missing)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragpulse judge: error:") and str(missing) in lines[0]


def test_unknown_command_exits_non_zero() -> None:
    out = subprocess.run([RAGPULSE, "no-such-command"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
