"""Numeric dates, clock times, abbreviated months and ordinal words read as their sources write them."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.claims import extract_claims
from ragpulse.collector.judge.local.evidence import split_sentences
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.text.tokens import tokenise

from tests.judge_records import judged_claims


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("written", "tokens"),
    [
        ("2020-01-15", ["15", "January", "2020"]),
        ("2020/1/5", ["5", "January", "2020"]),
        ("1/15/2020", ["15", "January", "2020"]),
        ("15.01.2020", ["15.01.2020"]),  # dotted dates are read as written
        ("3/4/2020", ["3", "4", "2020"]),  # March or April: read as written
        ("2020-13-01", ["2020", "13", "01"]),  # no month 13
        ("3 pm", ["15:00"]),
        ("3:30 p.m.", ["15:30"]),
        ("12 am", ["00:00"]),
        ("15:00", ["15:00"]),
        ("25:00", ["25", "00"]),
        ("Jan. 2020", ["January", "2020"]),
        ("Sept 5", ["September", "5"]),
        ("Jan Smith", ["Jan", "Smith"]),  # a name, not a month
    ],
)
def test_dates_and_times_are_read_as_words(written: str, tokens: list[str]) -> None:
    assert tokenise(written) == tokens


def test_an_abbreviated_month_ends_no_sentence() -> None:
    chunk = "The drug was approved on Jan. 15, 2020, by the FDA. It shipped in Feb. Sales rose."
    assert split_sentences(chunk) == [
        "The drug was approved on Jan. 15, 2020, by the FDA.",
        "It shipped in Feb.",
        "Sales rose.",
    ]
    answer = "The drug was approved in Jan. 2020. It shipped in Feb. Sales rose."
    assert [c.text for c in extract_claims(answer, []).claims] == [
        "The drug was approved in Jan. 2020.",
        "It shipped in Feb.",
        "Sales rose.",
    ]


@pytest.mark.parametrize(
    ("answer", "chunk"),
    [
        (
            "The drug was approved on 2020-01-15 [1].",
            "The drug was approved on January 15, 2020, after review.",
        ),
        ("The drug was approved on 1/15/2020 [1].", "The drug was approved on 15 January 2020 after review."),
        ("The drug was approved in Jan. 2020 [1].", "The drug was approved in January 2020 after review."),
        ("The pharmacy closes at 6 pm on weekdays [1].", "On weekdays the pharmacy closes at 18:00."),
    ],
)
def test_a_date_or_time_written_another_way_supports_the_claim(
    judge: LocalJudge, answer: str, chunk: str
) -> None:
    assert [c["verdict"] for c in judged_claims(judge, answer, chunk, query="")] == ["supported"]


def test_another_date_still_contradicts(judge: LocalJudge) -> None:
    chunk = "The drug was approved on January 15, 2020, after review."
    assert (
        judged_claims(judge, "The drug was approved on 2021-03-15 [1].", chunk, query="")[0]["verdict"]
        != "supported"
    )


@pytest.mark.parametrize(
    ("written", "tokens"),
    [
        ("Sales fell in the second quarter", ["Sales", "fell", "in", "the", "2nd", "quarter"]),
        ("Sales fell in Q2 2023", ["Sales", "fell", "in", "2nd", "quarter", "2023"]),
        ("Second, sales fell", ["Second", "sales", "fell"]),
        ("A 30 second ad ran for a second", ["A", "30", "second", "ad", "ran", "for", "a", "second"]),
    ],
)
def test_second_is_the_ordinal_unless_it_is_the_unit(written: str, tokens: list[str]) -> None:
    assert tokenise(written) == tokens


def test_a_quarter_written_another_way_supports_the_claim(judge: LocalJudge) -> None:
    chunk = "The company reported its first second-quarter loss since 2009."
    for answer in ("The company reported a 2nd quarter loss [1].", "The company reported a Q2 loss [1]."):
        assert judged_claims(judge, answer, chunk, query="")[0]["verdict"] == "supported", answer
