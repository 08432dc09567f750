"""Acceptance: the reference note's worked example (examples/worked_example/) reproduces the figures
of its two tables: from the note's own reference judgments, and with the local judge deciding
every entailment (retained/retention are one stem for G |= y; "requires X"
is not "X alone is sufficient" for y |= f)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.eval.cache import CachedJudge
from ragpulse.collector.eval.entail import AnswerClaim, CaseFacts
from ragpulse.collector.eval.evaluate import evaluate
from ragpulse.collector.eval.files import load_evalset, load_run
from ragpulse.collector.eval.metrics import case_metrics
from ragpulse.collector.judge import get_judge

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "worked_example"
ARTICLE = json.loads((EXAMPLE / "article.json").read_text(encoding="utf-8"))
CASES = {c["id"]: c for c in load_evalset(EXAMPLE / "evalset.jsonl")}
RUN = load_run(EXAMPLE / "run.jsonl", CASES)
FIGURES = [(cid, k) for cid, body in ARTICLE["cases"].items() for k in body["expected"]]


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and got is not None and not isinstance(got, bool):
        return abs(got - want) < 1e-3
    return got == want


def _reference_facts(case: dict[str, Any], run: dict[str, Any], notes: dict[str, Any]) -> CaseFacts:
    """The entailment facts as the note states them (its annotations), no judge involved."""
    gold_chunks = {
        g: [c for c in ch if c in {x["id"] for x in run["chunks"]}]
        for g, ch in ARTICLE["gold_claim_chunks"].items()
    }
    claims = [
        AnswerClaim(
            text=a["text"],
            chunk_ids=a["supported_by_chunks"],
            cited_chunk_ids=a.get("cited", []),
            citation_valid=(set(a["cited"]) <= set(a["supported_by_chunks"])) if a.get("cited") else None,
            gold_ids=a["entails_gold"],
            forbidden_ids=a["matches_forbidden"],
        )
        for a in notes["annotations"]["answer_claims"]
    ]
    gold_answer = {
        g: [i for i, c in enumerate(claims) if g in c.gold_ids] for g in ARTICLE["gold_claim_chunks"]
    }
    cited = [c for c in claims if c.cited_chunk_ids]
    return CaseFacts(
        chunk_ids=[c["id"] for c in run["chunks"]],
        chunks=run["chunks"],
        claims=claims,
        abstained=notes["annotations"]["abstained"],
        gold_chunks=gold_chunks if case["gold_claims"] else {},
        gold_answer=gold_answer if case["gold_claims"] else {},
        citation_correctness=(sum(bool(c.citation_valid) for c in cited) / len(cited)) if cited else None,
        citation_completeness=(sum(bool(c.citation_valid) for c in cited) / len(claims)) if cited else None,
    )


@pytest.mark.parametrize(("case_id", "metric"), FIGURES)
def test_reference_judgments_reproduce_the_tables(case_id: str, metric: str) -> None:
    notes = ARTICLE["cases"][case_id]
    facts = _reference_facts(CASES[case_id], RUN[case_id], notes)
    got = case_metrics(CASES[case_id], RUN[case_id], facts)[metric]
    assert _same(got, notes["expected"][metric]), (got, notes["expected"][metric])


@pytest.fixture(scope="module")
def local_doc() -> dict[str, Any]:
    return evaluate(CachedJudge(get_judge("local")), list(CASES.values()), RUN)


@pytest.mark.parametrize(("case_id", "metric"), FIGURES)
def test_local_judge_reproduces_the_tables(local_doc: dict[str, Any], case_id: str, metric: str) -> None:
    row = next(r for r in local_doc["cases"] if r["case_id"] == case_id)
    want = ARTICLE["cases"][case_id]["expected"][metric]
    assert _same(row["metrics"][metric], want), (row["metrics"][metric], want)


def test_cli_json_has_the_design_shape(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ragpulse.collector.cli", "eval", str(EXAMPLE / "evalset.jsonl"), str(EXAMPLE / "run.jsonl"),
         "--no-cache", "--json", str(out), "-q"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert {"judge_id", "cases", "overall", "slices", "comparison"} <= set(doc)
    assert doc["judge_id"].startswith("local-")
    assert [r["case_id"] for r in doc["cases"]] == list(CASES)
    expected_names = {k for body in ARTICLE["cases"].values() for k in body["expected"]}
    assert expected_names <= set(doc["cases"][0]["metrics"])
    d = next(r for r in doc["cases"] if r["case_id"] == "worked-example-D")["metrics"]
    assert (
        d["claim_precision"] is None
        and d["retrieval_claim_recall"] is None
        and d["abstention"] == "appropriate"
    )
    assert doc["overall"]["metrics"]["faithfulness"] == {"n": 4, "mean": 1.0, "ci": [1.0, 1.0]}
    assert set(doc["slices"]["answerability"]) == {"answerable", "unanswerable"}
    assert doc["slices"]["answerability"]["unanswerable"]["n"] == 1
