"""Eval-set and run validation against docs/evalset.schema.json, gate files, and aggregation rules
(n per slice, holdout apart, metrics that do not apply are null)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from ragpulse.collector.cli.main import main
from ragpulse.collector.eval.aggregate import aggregate, slice_cases
from ragpulse.collector.eval.files import EvalInputError, load_evalset, load_run, load_schema
from ragpulse.collector.eval.gate import check_gates, load_gates
from ragpulse.policy_rag.evalset import build_evalset

ROOT = Path(__file__).resolve().parents[1]
WORKED = ROOT / "examples" / "worked_example"


def _lines(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_packaged_schema_is_the_documented_one() -> None:
    doc = json.loads((ROOT / "docs" / "evalset.schema.json").read_text(encoding="utf-8"))
    assert load_schema() == doc
    Draft202012Validator.check_schema(doc)


def test_design_example_case_and_policy_evalset_validate(tmp_path: Path) -> None:
    design_case = {
        "id": "case-3f9a", "query": "...", "corpus_snapshot_id": "2026-11-30", "answerability": "answerable",
        "gold_claims": ["Normal retention is five years."],
        "supporting_evidence_spans": [{"doc_id": "C1", "start": 0, "end": 88, "text": "..."}],
        "acceptable_alternative_sources": ["C7"], "forbidden_or_outdated_claims": ["Retention is three years."],
        "query_type": "lookup", "difficulty": "medium", "temporal_scope": "current", "risk_level": "high",
        "split": "dev", "review": {"status": "proposed", "reviewer": None, "reviewed_at": None},
        "provenance": {"trace_ids": ["t"], "service": "s", "first_seen": "x", "last_seen": "y", "occurrences": 3,
                       "reasons": ["failure_mode:generation"], "judge_id": "j", "scores": {"faithfulness": 0.5},
                       "failure_mode": "generation", "answer": "...",
                       "chunks": [{"id": "C1", "content": "...", "score": 0.8, "metadata": {}}], "citations": [],
                       "proposed": {"supported_claims": ["..."], "unsupported_claims": ["..."]}},
    }  # fmt: skip
    assert load_evalset(_lines(tmp_path / "d.jsonl", [design_case]))[0]["id"] == "case-3f9a"
    assert len(load_evalset(_lines(tmp_path / "p.jsonl", build_evalset()))) == 83


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"query": "q"}, "'id' is a required property"),
        ({"id": "a", "query": "q", "answerability": "maybe"}, "answerability"),
        ({"id": "a", "query": "q", "split": "test"}, "split"),
        ({"id": "a", "query": "q", "gold_claims": "one claim"}, "gold_claims"),
    ],
)
def test_bad_cases_name_file_line_and_field(tmp_path: Path, row: dict, message: str) -> None:
    path = _lines(tmp_path / "bad.jsonl", [{"id": "ok", "query": "q"}, row])
    with pytest.raises(EvalInputError, match=rf"bad.jsonl:2: .*{message}"):
        load_evalset(path)


def test_run_records_must_match_cases(tmp_path: Path) -> None:
    ids = ["a", "b"]
    with pytest.raises(EvalInputError, match="case_id 'zz' is not in the eval set"):
        load_run(_lines(tmp_path / "r.jsonl", [{"case_id": "zz", "answer": "x"}]), ids)
    with pytest.raises(EvalInputError, match="a second record for case 'a'"):
        load_run(_lines(tmp_path / "r.jsonl", [{"case_id": "a", "answer": "x"}] * 2), ids)
    with pytest.raises(EvalInputError, match="r.jsonl:1: .*'answer' is a required property"):
        load_run(_lines(tmp_path / "r.jsonl", [{"case_id": "a"}]), ids)


def test_cli_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _lines(tmp_path / "bad.jsonl", [{"id": "x"}])
    assert main(["eval", str(bad), str(WORKED / "run.jsonl"), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ragpulse eval: error: ") and "bad.jsonl:1" in err[0]
    assert main(["eval", str(WORKED / "evalset.jsonl"), "--no-cache"]) == 2
    assert "give either a RUN file or --app" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- {metric: nonsense, minimum: 1}", "unknown or non-numeric metric"),
        ("- {metric: strict_pass}", "give minimum, maximum or max_regression"),
        ("- {metric: strict_pass, minimum: 0.5, colour: red}", "unknown key"),
        ("- {metric: strict_pass, minimum: 0.5, slice: high}", "FIELD=VALUE"),
        ("[]", "non-empty list"),
    ],
)
def test_bad_gate_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(EvalInputError, match=message):
        load_gates(path)


def _doc(values: dict[str, list[float | None]], risk: list[str]) -> dict:
    results = [
        {"case_id": f"c{i}", "split": "dev", "metrics": {m: v[i] for m, v in values.items()}}
        for i in range(len(risk))
    ]
    cases = {f"c{i}": {"id": f"c{i}", "risk_level": r} for i, r in enumerate(risk)}
    slices = slice_cases(cases, results, ["risk_level"])
    return {
        "overall": aggregate(results),
        "holdout": aggregate([]),
        "slices": {f: {v: aggregate(rs) for v, rs in vals.items()} for f, vals in slices.items()},
        "comparison": None,
    }


def test_gates_check_minimum_maximum_slice_and_empty(tmp_path: Path) -> None:
    doc = _doc(
        {"strict_pass": [1, 1, 0, 0], "hallucination": [0.0, 0.5, None, 0.0]}, ["high", "high", "low", "low"]
    )
    path = tmp_path / "g.yaml"
    path.write_text(
        "gates:\n"
        "- {metric: strict_pass, minimum: 0.5}\n"  # 0.5: passes
        "- {metric: strict_pass, slice: risk_level=low, minimum: 0.5}\n"  # 0.0: fails
        "- {metric: hallucination, maximum: 0.1}\n"  # 1/6: fails, n=3
        "- {metric: strict_pass, slice: risk_level=none, minimum: 0}\n"  # empty slice: fails
        "- {metric: strict_pass, max_regression: 0.0}\n",  # no baseline: fails
        encoding="utf-8",
    )
    results = check_gates(load_gates(path), doc)
    assert [r.passed for r in results] == [True, False, False, False, False]
    assert results[1].message == "strict_pass [risk_level=low]: mean 0.0000 < minimum 0.5 (n=2)"
    assert results[2].message == "hallucination [overall]: mean 0.1667 > maximum 0.1 (n=3)"
    assert "0 applicable case(s)" in results[3].message
    assert "needs --baseline" in results[4].message


def test_slices_carry_n_and_holdout_stays_out(tmp_path: Path) -> None:
    cases = [json.loads(line) for line in (WORKED / "evalset.jsonl").read_text(encoding="utf-8").splitlines()]
    cases[0]["split"] = "holdout"
    evalset = _lines(tmp_path / "e.jsonl", cases)
    out = tmp_path / "o.json"
    assert (
        main(
            [
                "eval",
                str(evalset),
                str(WORKED / "run.jsonl"),
                "--no-cache",
                "-q",
                "--json",
                str(out),
                "--slice",
                "corpus_snapshot_id",
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["overall"]["n"] == 3 and doc["holdout"]["n"] == 1
    assert doc["slices"]["split"]["holdout"]["n"] == 1 and doc["slices"]["split"]["dev"]["n"] == 3
    assert sum(v["n"] for v in doc["slices"]["answerability"].values()) == 3  # dev only
    assert doc["slices"]["corpus_snapshot_id"]["policy-snapshot-without-C1-C2"]["n"] == 1


def test_llm_judge_decides_through_litellm_and_is_cached(tmp_path: Path) -> None:
    """``--judge MODEL`` sends every entailment question to an OpenAI-compatible server through
    litellm; the report pins the LLM judge's id; a second run is answered from the cache."""
    from tests.judge_llm_server import ScriptedLLMServer, all_supported

    out, cache = tmp_path / "o.json", tmp_path / "j.sqlite"
    with ScriptedLLMServer(all_supported) as srv:
        args = ["eval", str(WORKED / "evalset.jsonl"), str(WORKED / "run.jsonl"), "--judge", "openai/fake-judge",
                "--api-base", srv.url, "--cache", str(cache), "-q", "--json", str(out)]  # fmt: skip
        assert main(args) == 0
        first = json.loads(out.read_text(encoding="utf-8"))
        asked = len(srv.requests)
        assert main(args) == 0
        again = json.loads(out.read_text(encoding="utf-8"))
        assert len(srv.requests) == asked
    assert first["judge_id"].startswith("llm-") and "fake-judge" in first["judge_id"]
    assert asked == first["judge_calls"]["judged"] > 4  # the 4 run records plus the entailment questions
    assert again["judge_calls"] == {"judged": 0, "cached": asked, "cost_usd": 0.0}
    # Every claim "supported" by the scripted judge: run A's faithfulness stays 1.0, and its gold
    # claims count as retrieved because the script supports them with the first chunk.
    a = next(c for c in first["cases"] if c["case_id"] == "worked-example-A")["metrics"]
    assert a["faithfulness"] == 1.0 and a["retrieval_claim_recall"] == 1.0
