"""``ragpulse judge``: files, stdin/stdout, malformed lines, progress, the LLM judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ragpulse.collector.cli.main import main

RECORD = {
    "trace_id": "t1",
    "query": "How long are logs kept?",
    "answer": "Logs are kept for five years [1].",
    "chunks": [{"id": "C1", "content": "Covered institutions retain transaction logs for five years."}],
}


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_judge_file_to_file(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.jsonl", [json.dumps(dict(RECORD, trace_id=f"t{i}")) for i in range(3)] + [""])
    dst = tmp_path / "out.jsonl"
    assert main(["judge", str(src), "-o", str(dst)]) == 0
    outs = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [o["trace_id"] for o in outs] == ["t0", "t1", "t2"]
    assert all(o["faithfulness"] == 1.0 and o["judge_id"].startswith("local-") for o in outs)


def test_stdin_to_stdout_and_malformed_lines_in_a_real_process(tmp_path: Path) -> None:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    cmd = [str(Path(sys.executable).parent / "ragpulse"), "judge"]  # the installed console script
    good = json.dumps(RECORD) + "\n"
    ok = subprocess.run(cmd, input=good, capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["trace_id"] == "t1"
    bad = subprocess.run(
        cmd, input=good + "{not json\n", capture_output=True, text=True, env=env, timeout=120
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.strip().count("\n") == 0
    assert "line 2: invalid JSON" in bad.stderr


def test_missing_answer_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path / "in.jsonl", [json.dumps(RECORD), json.dumps({"trace_id": "x", "query": "q"})])
    assert main(["judge", str(src), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "line 2: missing string field 'answer'" in capsys.readouterr().err


def test_skip_bad_records_an_error_and_continues(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(
        tmp_path / "in.jsonl", [json.dumps(RECORD), "[1, 2]", json.dumps(dict(RECORD, trace_id="t3"))]
    )
    dst = tmp_path / "out.jsonl"
    assert main(["judge", str(src), "-o", str(dst), "--skip-bad"]) == 0
    outs = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [o["trace_id"] for o in outs] == ["t1", "line:2", "t3"]
    assert outs[1]["error"].startswith("malformed input: line 2") and outs[1]["faithfulness"] is None
    assert "1 errors" in capsys.readouterr().err


def test_progress_on_large_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path / "in.jsonl", [json.dumps(dict(RECORD, trace_id=f"t{i}")) for i in range(250)])
    assert main(["judge", str(src), "-o", str(tmp_path / "o.jsonl")]) == 0
    assert "judged 250 traces" in capsys.readouterr().err


def test_unreadable_input_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_llm_judge_from_the_cli(tmp_path: Path) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from tests.judge_llm_server import ScriptedLLMServer, all_supported

    src = _write(
        tmp_path / "in.jsonl",
        [json.dumps(dict(RECORD, trace_id=f"t{i}", answer=f"Logs {i} [1].")) for i in range(5)],
    )
    dst = tmp_path / "out.jsonl"
    with ScriptedLLMServer(all_supported) as srv:
        rc = main(["judge", str(src), "-o", str(dst), "--judge", "openai/fake-judge", "--api-base", srv.url])
        assert rc == 0
        assert len(srv.requests) == 5
    outs = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [o["judge_tier"] for o in outs] == ["llm"] * 5
    assert all(o["error"] is None for o in outs)


def test_non_utf8_line_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(json.dumps(RECORD).encode() + b"\n\xff\xfe broken\n")
    assert main(["judge", str(src), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "line 2: not UTF-8 text" in capsys.readouterr().err


def _minilm_installed() -> bool:
    """Whether the tier can find its weights, by the tier's own lookup."""
    from ragpulse.collector.judge.tiers.minilm import TierUnavailable, locate_model

    try:
        locate_model()
    except TierUnavailable:
        return False
    return True


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--judge", "openai/fake-judge", "--minilm"], "--minilm is a tier of the local judge"),
        (
            ["--judge", "openai/fake-judge", "--minilm-band", "0.3", "0.7"],
            "--minilm is a tier of the local judge",
        ),
        (["--judge", "openai/fake-judge", "--entailment"], "--entailment is a tier of the local judge"),
        (["--minilm", "--entailment-band", "0.3", "0.7"], "one second tier at most"),
        (["--api-base", "http://127.0.0.1:9"], "--api-base needs an LLM judge, not --judge local"),
        (["--judge", "tiered", "--api-base", "http://127.0.0.1:9"], "--api-base needs an LLM judge"),
    ],
)
def test_judge_options_that_do_not_fit_the_judge_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    src = _write(tmp_path / "in.jsonl", [json.dumps(RECORD)])
    assert main(["judge", str(src), "-o", str(tmp_path / "o.jsonl"), *extra]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["local", "tiered"])
def test_minilm_tier_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    """``--minilm-band`` turns the second tier on: with its weights package the judge id names
    the tier and its band; without it the command says how to install it (exit 2)."""
    record = RECORD | {"answer": RECORD["answer"] + " Backups are copied to tape every hour."}
    src = _write(tmp_path / "in.jsonl", [json.dumps(record)])
    dst = tmp_path / "o.jsonl"
    rc = main(["judge", str(src), "-o", str(dst), "--judge", spec, "--minilm-band", "0", "1"])
    if not _minilm_installed():
        assert rc == 2
        assert "pip install" in capsys.readouterr().err
        return
    assert rc == 0
    (out,) = [json.loads(line) for line in dst.read_text().splitlines()]
    assert "+minilm-" in out["judge_id"] and out["error"] is None
    # Band [0, 1]: every claim re-scored but the one its chunk supports on its own.
    assert [c["verdict"] for c in out["claims"]] == ["supported", "unsupported"]
    assert out["tier2_claims"] == 1
