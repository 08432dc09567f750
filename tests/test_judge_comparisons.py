"""Local judge: a comparison flipped against the sentence the claim rests on is contradicted."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local import LocalJudge


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


def _claim(judge: LocalJudge, answer: str, chunk: str) -> dict:
    out = judge.judge(
        {
            "trace_id": "t",
            "query": "What changed?",
            "answer": answer,
            "chunks": [{"id": "C1", "content": chunk}],
        }
    )
    (claim,) = out["claims"]
    return claim


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("Revenue rose by less than 10% in 2023.", "Revenue rose by more than 10% in 2023."),
        (
            "The bridge was closed before the storm damaged its supports.",
            "The bridge was closed after the storm damaged its supports.",
        ),
        ("The vaccine is approved for people under 65.", "The vaccine is approved for people over 65."),
        ("The tax applies to incomes below $50,000.", "The tax applies to incomes above $50,000."),
        ("Employees must submit the form after 30 days.", "Employees must submit the form within 30 days."),
        ("Prices were lower in 2022 than in 2021.", "Prices were higher in 2022 than in 2021."),
    ],
)
def test_a_flipped_comparison_is_contradicted(judge: LocalJudge, claim: str, chunk: str) -> None:
    out = _claim(judge, claim, chunk)
    assert out["verdict"] == "contradicted"
    assert out["contradicting_chunk_ids"] == ["C1"]


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("Revenue rose by more than 10% in 2023.", "Revenue rose by more than 10% in 2023."),
        # the sentence says the claim's comparison too
        (
            "Employees must submit the form within 30 days.",
            "Employees must submit the form within 30 days after the end of the project.",
        ),
        ("The museum opened before the war.", "The museum opened before the war and closed after it."),
        # the opposite word compares something else
        ("More than 500 people attended.", "More than 500 people attended, fewer than last year."),
    ],
)
def test_the_same_comparison_stays_supported(judge: LocalJudge, claim: str, chunk: str) -> None:
    assert _claim(judge, claim, chunk)["verdict"] == "supported"
