"""Local judge: a comparison flipped, or two numbers swapped, against the sentence the claim rests on is contradicted."""

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


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("The store opens at 5 and closes at 9.", "The store opens at 9 and closes at 5."),
        ("The company has 30 staff and 5,000 offices.", "The company has 5,000 staff and 30 offices."),
        (
            "Revenue was $2 million and profit $5 million in 2019.",
            "Revenue was $5 million and profit $2 million in 2019.",
        ),
    ],
)
def test_two_numbers_swapped_are_contradicted(judge: LocalJudge, claim: str, chunk: str) -> None:
    out = _claim(judge, claim, chunk)
    assert out["verdict"] == "contradicted"
    assert out["contradicting_chunk_ids"] == ["C1"]


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("The store opens at 9 and closes at 5.", "The store opens at 9 and closes at 5."),
        # the same facts in another order
        ("The company has 30 offices and 5,000 staff.", "The company has 5,000 staff and 30 offices."),
        ("He works 9 hours a day and 5 days a week.", "He works 5 days a week and 9 hours a day."),
        # a date's day goes on either side of its month
        (
            "He was born on June 5, 1954.",
            "Alberto Malesani (born 5 June 1954) is an Italian football manager.",
        ),
    ],
)
def test_numbers_in_another_order_stay_supported(judge: LocalJudge, claim: str, chunk: str) -> None:
    assert _claim(judge, claim, chunk)["verdict"] == "supported"


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("France defeated Germany 2-1 in the final.", "Germany defeated France 2-1 in the final."),
        (
            "Jones was replaced by Smith as chairman in 2019.",
            "Smith was replaced by Jones as chairman in 2019.",
        ),
        ("Microsoft acquired Google in 2014.", "Microsoft was acquired by Google in 2014."),
        (
            "The treaty was signed in London and ratified in Paris.",
            "The treaty was signed in Paris and ratified in London.",
        ),
    ],
)
def test_two_names_in_swapped_roles_are_contradicted(judge: LocalJudge, claim: str, chunk: str) -> None:
    out = _claim(judge, claim, chunk)
    assert out["verdict"] == "contradicted"


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("Google acquired Microsoft in 2014.", "Microsoft was acquired by Google in 2014."),
        ("Jones replaced Smith as chairman in 2019.", "Smith was replaced by Jones as chairman in 2019."),
        ("France and Germany signed the treaty in Paris.", "Germany and France signed the treaty in Paris."),
        ("The CEO of Acme reported profits rose by 5%.", "Profits rose by 5%, the CEO of Acme reported."),
        # a passive without an agent keeps the roles; a month moves freely
        ("Sedgwick is married to Kevin Bacon.", "Sedgwick married actor Kevin Bacon on September 4, 1988."),
        ('"Sunshine" was released in August 2021.', 'In August 2021, Payne released "Sunshine," a single.'),
    ],
)
def test_names_in_the_same_roles_stay_supported(judge: LocalJudge, claim: str, chunk: str) -> None:
    assert _claim(judge, claim, chunk)["verdict"] == "supported"
