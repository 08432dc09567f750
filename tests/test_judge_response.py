"""The local judge's response verdict (collector/judge/local/response.py): the rule, its
packaged weights file, and the judge using it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.local.response import ResponseRule, claim_score, load_response_rule

RULE = ResponseRule(version="test", mean_below=0.6, digest="")
S, U, C = "supported", "unsupported", "contradicted"


def test_a_claim_score_is_held_to_its_verdict() -> None:
    assert claim_score(S, 0.3, 0.5) == 0.5  # supported (one chunk alone): at least the threshold
    assert claim_score(S, 0.8, 0.5) == 0.8
    assert claim_score(U, 0.3, 0.5) == 0.3
    assert claim_score(U, 0.7, 0.5) == 0.0  # support withdrawn by a conflict rule
    assert claim_score(C, 0.3, 0.5) == 0.0


def test_every_claim_supported_is_faithful_whatever_the_mean() -> None:
    assert RULE.verdict([S, S], [0.5, 0.5], 0.5) == "faithful"


def test_one_weak_claim_among_well_supported_ones_is_unsure() -> None:
    # mean (0.9 + 0.9 + 0.9 + 0.3) / 4 = 0.75 >= 0.6
    assert RULE.verdict([S, S, S, U], [0.9, 0.9, 0.9, 0.3], 0.5) == "unsure"


def test_a_low_mean_or_a_contradiction_is_hallucinated() -> None:
    # mean (0.9 + 0.2 + 0.3) / 3 = 0.47 < 0.6
    assert RULE.verdict([S, U, U], [0.9, 0.2, 0.3], 0.5) == "hallucinated"
    assert RULE.verdict([S, S, S, C], [0.95, 0.95, 0.95, 0.45], 0.5) == "hallucinated"
    assert RULE.verdict([U], [0.45], 0.5) == "hallucinated"  # a lone claim: mean 0.45


def test_no_claims_no_verdict() -> None:
    assert RULE.verdict([], [], 0.5) is None


def test_the_packaged_rule_is_fitted_and_loads(tmp_path: Path) -> None:
    rule = load_response_rule()
    assert 0.0 < rule.mean_below < 1.0
    assert len(rule.digest) == 8
    bad = tmp_path / "response.json"
    bad.write_text(json.dumps({"version": "x", "mean_below": 1.5}))
    with pytest.raises(ValueError, match="mean_below"):
        load_response_rule(bad)


def test_the_judge_id_pins_the_response_weights(tmp_path: Path) -> None:
    other = tmp_path / "response.json"
    other.write_text(json.dumps({"version": "1", "mean_below": 0.3}))
    assert get_judge("local").judge_id != get_judge("local", response_weights=str(other)).judge_id


def _judged(judge: LocalJudge, answer: str) -> dict:
    chunks = [
        "Audit logs are retained for five years in the primary archive.",
        "Backups run nightly and are kept for thirty days.",
        "Access to the archive requires approval from the records officer.",
    ]
    return judge.judge(
        {
            "trace_id": "t",
            "query": "How long are audit logs retained?",
            "answer": answer,
            "chunks": [{"id": f"C{i + 1}", "content": c} for i, c in enumerate(chunks)],
        }
    )


def test_the_judge_reads_its_verdict_from_the_rule(tmp_path: Path) -> None:
    answer = (
        "Audit logs are retained for five years in the primary archive. Backups run nightly and "
        "are kept for thirty days. The archive is located in Frankfurt."
    )
    strict, lenient = tmp_path / "strict.json", tmp_path / "lenient.json"
    strict.write_text(json.dumps({"version": "1", "mean_below": 1.0}))
    lenient.write_text(json.dumps({"version": "1", "mean_below": 0.0}))
    flagged = _judged(get_judge("local", response_weights=str(strict)), answer)  # type: ignore[arg-type]
    assert [c["verdict"] for c in flagged["claims"]] == [S, S, U]
    assert flagged["response_verdict"] == "hallucinated"
    assert _judged(get_judge("local", response_weights=str(lenient)), answer)["response_verdict"] == "unsure"  # type: ignore[arg-type]
    clean = _judged(get_judge("local", response_weights=str(strict)), answer.rsplit(".", 2)[0] + ".")  # type: ignore[arg-type]
    assert clean["response_verdict"] == "faithful"
