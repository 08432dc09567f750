"""Rounded and qualified numbers in claims read as the evidence values they stand for."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.approximate import claim_profile
from ragpulse.collector.judge.text import profile

CHUNK = (
    "The agency processed 1,523,400 applications in 2019, up from 1,210,000 in 2018. "
    "About 48.7 percent of applicants were women. The office opened in 2013 and employs 312 staff."
)
EVIDENCE = profile(CHUNK).numbers


@pytest.mark.parametrize(
    ("claim", "read_as"),
    [
        ("about 1.5 million applications", "1523400"),
        ("over 1.5 million applications", "1523400"),
        ("roughly 1.52 million applications", "1523400"),
        ("1.5 million applications", "1523400"),  # rounded, two significant digits
        ("about 49 percent", "48.7"),
        ("49% of applicants", "48.7"),
        ("nearly 50 percent", "48.7"),
        ("more than 300 staff", "312"),
        ("around 310 people", "312"),
    ],
)
def test_an_approximation_reads_as_the_evidence_value(claim: str, read_as: str) -> None:
    cp = claim_profile(claim, EVIDENCE)
    assert read_as in cp.numbers
    assert read_as in cp.stem_set  # the coverage features see it too
    assert "about" not in cp.tokens and "over" not in cp.tokens  # the qualifier went with it


@pytest.mark.parametrize(
    "claim",
    [
        "2.5 million applications",  # a different value
        "2 million applications",  # one significant digit, no qualifier: not a rounding
        "300 staff",  # likewise
        "about 26 percent",  # about 26 is not 25 or 48.7
        "more than 320 staff",  # 312 is not more than 320
        "nearly 300 staff",  # 312 is not nearly 300
        "opened in 2010",  # a year is exact
        "about 60 percent",  # within rounding of nothing
        "the under-18 level",  # "under" names an age group, it does not qualify
    ],
)
def test_other_numbers_stay_as_written(claim: str) -> None:
    assert claim_profile(claim, EVIDENCE).numbers == profile(claim).numbers


def test_the_evidence_value_is_bounded_by_a_tenth_of_the_claim() -> None:
    # "about 100" rounds anything from 50 to 149 at one significant digit; it is read as 95,
    # not as 60 (a long chunk has many numbers to meet by chance).
    assert "95" in claim_profile("about 100 films", frozenset({"95"})).numbers
    assert "60" not in claim_profile("about 100 films", frozenset({"60"})).numbers


def test_a_rounded_or_qualified_number_is_not_a_contradiction() -> None:
    judge = get_judge("local")

    def verdict(answer: str) -> str:
        out = judge.judge(
            {"trace_id": "t", "query": "q?", "answer": answer, "chunks": [{"id": "C1", "content": CHUNK}]}
        )
        return out["claims"][0]["verdict"]

    for faithful in (
        "The agency processed about 1.5 million applications in 2019.",
        "The office employs more than 300 staff.",
        "About 49% of applicants were women.",
    ):
        assert verdict(faithful) == "supported", faithful
    assert verdict("The agency processed 2.5 million applications in 2019.") == "contradicted"
    assert verdict("The office employs about 400 staff.") == "contradicted"
