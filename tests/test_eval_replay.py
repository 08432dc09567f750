"""Replay acceptance: the demo's policy assistant run through ``ragpulse eval --app`` on its eval set.

Two generator configurations (failure rates 0 and high) against the same frozen contexts: the gate
passes the better and fails the worse, in absolute and in paired-regression form; the position
sweep shows the Lost-in-the-Middle dip for a position-sensitive generator and none for the careful
one; an instrumented app is read from its spans; the judgment cache makes a re-run judge nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.cli.main import main
from ragpulse.collector.eval.files import write_jsonl
from ragpulse.policy_rag.evalset import build_evalset

APP = "ragpulse.policy_rag.replay"


@pytest.fixture(scope="module")
def evalset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("evalset") / "policy.jsonl"
    write_jsonl(path, build_evalset())
    return path


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One judgment cache for the module's evals (the cache test uses its own)."""
    return tmp_path_factory.mktemp("cache") / "judgments.sqlite"


def _eval(tmp: Path, *args: str, cache: Path | None = None) -> tuple[int, dict[str, Any]]:
    out = tmp / f"out-{len(list(tmp.iterdir()))}.json"
    rc = main(["eval", *args, "--json", str(out), "-q", "--cache", str(cache or tmp / "judgments.sqlite")])
    return rc, json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}


def _gate(tmp: Path, text: str) -> str:
    path = tmp / f"gate-{len(list(tmp.iterdir()))}.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


GATES = Path(__file__).resolve().parents[1] / "examples" / "policy_rag" / "gates.yaml"


def test_gate_passes_the_better_generator_and_fails_the_worse(
    evalset: Path, tmp_path: Path, shared_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = str(GATES)
    rc, good = _eval(
        tmp_path,
        str(evalset),
        "--app",
        f"{APP}:careful",
        "--corpus-from-snapshot",
        "--gate",
        gate,
        cache=shared_cache,
    )
    assert rc == 0, capsys.readouterr().err
    assert "GATE FAILED" not in capsys.readouterr().err
    rc, bad = _eval(
        tmp_path,
        str(evalset),
        "--app",
        f"{APP}:sloppy",
        "--corpus-from-snapshot",
        "--gate",
        gate,
        cache=shared_cache,
    )
    assert rc == 1
    failed = [line for line in capsys.readouterr().err.splitlines() if line.startswith("GATE FAILED")]
    assert len(failed) == 3, failed  # one line per failing gate
    assert failed[0].startswith("GATE FAILED strict_pass [overall]: mean ")
    assert (
        good["overall"]["metrics"]["strict_pass"]["mean"] > bad["overall"]["metrics"]["strict_pass"]["mean"]
    )
    # Frozen contexts: retrieval metrics are identical for both configurations.
    for m in ("retrieval_claim_recall", "context_precision", "evidence_ndcg_at_k"):
        assert good["overall"]["metrics"][m] == bad["overall"]["metrics"][m]


def test_regression_gate_with_paired_intervals(
    evalset: Path, tmp_path: Path, shared_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    careful, sloppy = tmp_path / "careful.jsonl", tmp_path / "sloppy.jsonl"
    for name, path in (("careful", careful), ("sloppy", sloppy)):
        rc, _ = _eval(
            tmp_path,
            str(evalset),
            "--app",
            f"{APP}:{name}",
            "--corpus-from-snapshot",
            "--save-run",
            str(path),
            cache=shared_cache,
        )
        assert rc == 0
    gate = _gate(
        tmp_path,
        "- {metric: strict_pass, max_regression: 0.02}\n- {metric: claim_recall, max_regression: 0.02}\n",
    )
    rc, doc = _eval(
        tmp_path, str(evalset), str(sloppy), "--baseline", str(careful), "--gate", gate, cache=shared_cache
    )
    assert rc == 1
    comp = doc["comparison"]["overall"]
    assert comp["strict_pass"]["verdict"] == "worse" and comp["strict_pass"]["ci"][1] < 0
    assert comp["retrieval_claim_recall"]["verdict"] == "not established"
    assert sum(line.startswith("GATE FAILED") for line in capsys.readouterr().err.splitlines()) == 2
    rc, doc = _eval(
        tmp_path, str(evalset), str(careful), "--baseline", str(sloppy), "--gate", gate, cache=shared_cache
    )
    assert rc == 0 and doc["comparison"]["overall"]["strict_pass"]["verdict"] == "better"
    # The holdout split is compared apart and never part of the headline's n.
    assert (
        doc["comparison"]["holdout"]["strict_pass"]["n"] == doc["holdout"]["metrics"]["strict_pass"]["n"] > 0
    )
    assert doc["overall"]["n"] + doc["holdout"]["n"] == len(doc["cases"])


def test_sweep_position_shows_the_dip(evalset: Path, tmp_path: Path, shared_cache: Path) -> None:
    rc, mid = _eval(
        tmp_path,
        str(evalset),
        "--app",
        f"{APP}:lost_in_the_middle",
        "--corpus-from-snapshot",
        "--sweep-position",
        cache=shared_cache,
    )
    assert rc == 0
    curve = mid["position_sweep"]["metrics"]["claim_recall"]
    assert len(curve) == 5 and min(mid["position_sweep"]["n"]) > 30
    ends, centre = min(curve[0], curve[-1]), curve[2]
    assert centre < ends - 0.4, curve  # U-shaped: worst in the middle, best at both ends
    assert curve[1] < ends and curve[3] < ends
    rc, flat = _eval(
        tmp_path,
        str(evalset),
        "--app",
        f"{APP}:careful",
        "--corpus-from-snapshot",
        "--sweep-position",
        cache=shared_cache,
    )
    flat_curve = flat["position_sweep"]["metrics"]["claim_recall"]
    assert max(flat_curve) - min(flat_curve) < 0.05, flat_curve


def test_instrumented_app_is_read_from_its_spans(evalset: Path, tmp_path: Path, shared_cache: Path) -> None:
    small = tmp_path / "small.jsonl"
    small.write_text(
        "".join(evalset.read_text(encoding="utf-8").splitlines(keepends=True)[:6]), encoding="utf-8"
    )
    run = tmp_path / "run.jsonl"
    rc, doc = _eval(
        tmp_path, str(small), "--app", f"{APP}:instrumented", "--save-run", str(run), cache=shared_cache
    )
    assert rc == 0
    records = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 6 and all(len(r["trace_id"]) == 32 and r["chunks"] for r in records)
    assert records[0]["chunks"][0]["metadata"]["status"] in ("current", "superseded", "commentary")
    assert doc["overall"]["metrics"]["claim_recall"]["n"] > 0


def test_judgment_cache_judges_only_what_changed(evalset: Path, tmp_path: Path) -> None:
    args = [str(evalset), "--corpus-from-snapshot"]
    _, first = _eval(tmp_path, *args, "--app", f"{APP}:careful")
    _, again = _eval(tmp_path, *args, "--app", f"{APP}:careful")
    assert first["judge_calls"]["judged"] > 0 and again["judge_calls"]["judged"] == 0
    assert again["judge_calls"]["cached"] == first["judge_calls"]["judged"] + first["judge_calls"]["cached"]

    def quality(doc: dict[str, Any]) -> list[dict[str, Any]]:  # latency is the replay's own wall clock
        return [{k: v for k, v in c["metrics"].items() if k != "latency_ms"} for c in doc["cases"]]

    assert quality(again) == quality(first)
    _, changed = _eval(tmp_path, *args, "--app", f"{APP}:sloppy")
    assert (
        0
        < changed["judge_calls"]["judged"]
        < changed["judge_calls"]["judged"] + changed["judge_calls"]["cached"]
    )


def test_snapshot_needs_an_app_that_takes_chunks(
    evalset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _ = _eval(tmp_path, str(evalset), "--app", f"{APP}:instrumented", "--corpus-from-snapshot")
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "ragpulse eval: error: --corpus-from-snapshot: the app does not accept a 'chunks' argument"
    ]
    rc, _ = _eval(tmp_path, str(evalset), "--app", f"{APP}:instrumented", "--sweep-position")
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ragpulse eval: error: --sweep-position: the app does not accept a 'chunks' argument"]
