"""Calibration statistics against hand-computed values, and ``ragpulse calibrate``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from ragpulse.collector.cli.main import main
from ragpulse.collector.judge.calibrate import (
    accuracy,
    calibration_report,
    cohen_kappa,
    paired_bootstrap,
    ppi_mean,
)

Z = 1.959963984540054

# Small synthetic example, worked by hand:
# labelled: human y = [1, 0, 1, 1], judge f = [1, 1, 1, 1] -> rectifier y - f = [0, -1, 0, 0]
#   mean -0.25; sample variance ((.25^2)*3 + .75^2) / 3 = 0.75 / 3 = 0.25
# unlabelled judge scores [1, 1, 0, 1, 1, 0, 1, 1]: mean 0.75; sample variance
#   (6 * .25^2 + 2 * .75^2) / 7 = 1.5 / 7
# theta = 0.75 - 0.25 = 0.5; se = sqrt((1.5/7)/8 + 0.25/4)
LAB_Y = [1.0, 0.0, 1.0, 1.0]
LAB_F = [1.0, 1.0, 1.0, 1.0]
UNL_F = [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
SE = math.sqrt((1.5 / 7) / 8 + 0.25 / 4)


def test_cohen_kappa_hand_computed() -> None:
    a = [1, 1, 0, 0, 1, 0, 1, 1, 0, 1]
    b = [1, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    # p_o = 7/10; p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    assert accuracy(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    # Three categories: p_o = 4/6; marginals a: x3 y2 z1, b: x2 y2 z2 -> p_e = (6+4+2)/36 = 1/3
    a3 = ["x", "x", "x", "y", "y", "z"]
    b3 = ["x", "x", "y", "y", "z", "z"]
    assert cohen_kappa(a3, b3) == pytest.approx((4 / 6 - 1 / 3) / (1 - 1 / 3))
    assert cohen_kappa([1, 1], [1, 1]) == 1.0


def test_ppi_mean_and_interval_hand_computed() -> None:
    est, lo, hi = ppi_mean(LAB_Y, LAB_F, UNL_F)
    assert est == pytest.approx(0.5)
    assert lo == pytest.approx(0.5 - Z * SE)
    assert hi == pytest.approx(0.5 + Z * SE)
    assert SE == pytest.approx(0.298807, abs=1e-6)


def test_paired_bootstrap() -> None:
    assert paired_bootstrap([0, 0, 0], [1, 1, 1]) == (1.0, 1.0, 1.0)
    d, lo, hi = paired_bootstrap([0, 1, 0, 1, 1, 0, 1, 0], [1, 1, 0, 0, 1, 1, 0, 0], n_boot=2000, seed=3)
    assert d == pytest.approx(0.0)
    assert lo < 0 < hi
    # Deterministic for a seed.
    assert paired_bootstrap([0, 1, 0], [1, 1, 1], seed=5) == paired_bootstrap([0, 1, 0], [1, 1, 1], seed=5)


def _rows() -> list[dict]:
    rows = []
    for y, f in zip(LAB_Y, LAB_F, strict=True):
        rows.append(
            {
                "human": {"faithfulness": y, "failure_mode": "healthy" if y == 1 else "generation"},
                "judge": {"judge_id": "local-1.0:x", "faithfulness": f, "failure_mode": "healthy"},
                "judge_b": {"judge_id": "llm-v1:y", "faithfulness": y, "failure_mode": "healthy"},
            }
        )
    rows += [{"judge": {"judge_id": "local-1.0:x", "faithfulness": f}} for f in UNL_F]
    return rows


def test_calibration_report() -> None:
    rep = calibration_report(_rows(), n_boot=500)
    assert rep["labelled"] == 4 and rep["unlabelled"] == 8
    assert rep["metrics"]["faithful"]["accuracy"] == 0.75
    assert rep["metrics"]["failure_mode"]["accuracy"] == 0.75
    assert rep["metrics"]["faithfulness"]["mae"] == 0.25
    assert rep["ppi_faithfulness"]["estimate"] == 0.5
    assert rep["ppi_faithfulness"]["ci95"] == [round(0.5 - Z * SE, 4), round(0.5 + Z * SE, 4)]
    assert rep["judge_difference"]["delta"] == 0.25  # judge_b agrees 4/4, judge 3/4


def test_calibrate_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    assert main(["calibrate", str(labels), "--bootstrap", "500"]) == 0
    out = capsys.readouterr().out
    assert "mean faithfulness (PPI): 0.5000" in out
    assert f"[{0.5 - Z * SE:.4f}, {0.5 + Z * SE:.4f}]" in out
    assert "faithful" in out and "kappa" in out
    assert main(["calibrate", str(labels), "--json", "--bootstrap", "500"]) == 0
    assert json.loads(capsys.readouterr().out)["ppi_faithfulness"]["estimate"] == 0.5


def test_calibrate_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(tmp_path / "missing.jsonl")]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"human": {}}\n{oops\n')
    assert main(["calibrate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "line 2: invalid JSON" in err and err.count("\n") == 2
