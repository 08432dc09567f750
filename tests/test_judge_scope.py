"""Local judge: a claim that widens what its sentence restricts, and space-grouped thousands."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.evidence import build_evidence
from ragpulse.collector.judge.local import LocalJudge
from ragpulse.collector.judge.numbers import join_digit_groups
from ragpulse.collector.judge.text import char_classes, tokenise

LEAVE = "All full-time employees receive 20 days of paid leave."


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


def _claim(judge: LocalJudge, answer: str, chunk: str) -> dict:
    out = judge.judge(
        {
            "trace_id": "t",
            "query": "Who gets what?",
            "answer": answer,
            "chunks": [{"id": "C1", "content": chunk}],
        }
    )
    (claim,) = out["claims"]
    return claim


@pytest.mark.parametrize(
    ("claim", "chunk", "verdict"),
    [
        ("All employees receive 20 days of paid leave.", LEAVE, "unsupported"),
        (
            "The offer is valid for all customers.",
            "The offer is valid for new customers only.",
            "unsupported",
        ),
        (
            "The discount is available to all members.",
            "The discount is available only to registered members.",
            "unsupported",
        ),
        (
            "All employees receive 20 days of paid leave.",
            "Most employees receive 20 days of paid leave.",
            "contradicted",
        ),
        ("The museum is open to adults and children.", "The museum is open to adults only.", "contradicted"),
        (
            "HSBC is the largest bank in the world.",
            "HSBC is one of the largest banks in the world.",
            "unsupported",
        ),
        ("The river is the longest in Europe.", "The river is among the longest in Europe.", "unsupported"),
        ("He was the founder of the company.", "He was one of the founders of the company.", "unsupported"),
        (
            "Canberra is Australia's largest city.",
            "Canberra is Australia's largest inland city.",
            "unsupported",
        ),
        (
            "It is the most popular attraction in the city.",
            "It is the most popular tourist attraction in the city.",
            "unsupported",
        ),
        (
            "The city was designed by Walter Burley Griffin alone.",
            "The city was designed by Walter Burley Griffin and Marion Mahony Griffin.",
            "contradicted",
        ),
    ],
)
def test_a_claim_that_widens_a_restriction_is_not_supported(
    judge: LocalJudge, claim: str, chunk: str, verdict: str
) -> None:
    out = _claim(judge, claim, chunk)
    assert out["verdict"] == verdict
    assert out["support_probability"] < judge.threshold
    assert (out["contradicting_chunk_ids"] == ["C1"]) == (verdict == "contradicted")


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("Full-time employees receive 20 days of paid leave.", LEAVE),
        ("All full-time employees receive 20 days of paid leave.", LEAVE),
        ("The museum is open to adults.", "The museum is open to adults only."),
        ("The museum is open only to adults and seniors.", "The museum is open only to adults and seniors."),
        # a noun before the noun names the domain more often than it restricts
        ("All staff must complete the training.", "All hospital staff must complete the training."),
        ("HSBC is one of the largest banks in the world.", "HSBC is the largest bank in the world."),
        ("HSBC is one of the largest banks in the world.", "HSBC is one of the largest banks in the world."),
        (
            "HSBC reported a profit of $5 billion.",
            "One of the largest banks, HSBC, reported a profit of $5 billion.",
        ),
        ("Canberra is Australia's largest inland city.", "Canberra is Australia's largest inland city."),
        ("She was the first president of the society.", "She was the first female president of the society."),
        ("She won the award for Best Actress.", "She won the award for Best Supporting Actress."),
        (
            "The city was designed by Walter Burley Griffin.",
            "The city was designed by Walter Burley Griffin and Marion Mahony Griffin.",
        ),
        ("He was their only son.", "They had a son and a daughter; he was their only son."),
        ("She lived in Paris for a year.", "She lived alone in Paris for a year."),
        # idioms are no quantified noun
        (
            "Salah is the all-time leading goalscorer for Egypt.",
            "Salah is Egypt's all-time leading goalscorer.",
        ),
        (
            "Pele was one of the greatest footballers of all time.",
            "Pele was one of the greatest footballers of all time.",
        ),
    ],
)
def test_a_claim_within_the_restriction_stays_supported(judge: LocalJudge, claim: str, chunk: str) -> None:
    assert _claim(judge, claim, chunk)["verdict"] == "supported"


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The survey had 5 000 respondents.", ["The", "survey", "had", "5,000", "respondents"]),
        ("It cost 1\u00a0250\u00a0000 euros.", ["It", "cost", "1,250,000", "euros"]),
        ("It cost 1\u202f250 euros.", ["It", "cost", "1,250", "euros"]),
        # a year, a decimal, a hyphenated compound and lone small numbers stay as written
        ("In 2020 100 people came.", ["In", "2020", "100", "people", "came"]),
        ("It measured 5 000.5 metres.", ["It", "measured", "5", "000.5", "metres"]),
        ("He won 3 100-metre races.", ["He", "won", "3", "100", "metre", "races"]),
        ("Ages 7 to 12.", ["Ages", "7", "to", "12"]),
    ],
)
def test_space_grouped_thousands_read_as_one_number(text: str, tokens: list[str]) -> None:
    assert tokenise(text) == tokens


def test_a_text_without_digit_space_digit_is_returned_as_is() -> None:
    text = "Retention is 5 years for 90% of logs."
    assert join_digit_groups(text, char_classes(text)) is text


def test_a_chunk_with_grouped_thousands_supports_the_comma_form(judge: LocalJudge) -> None:
    chunk = "The survey had 5 000 respondents in total. Most of them were students."
    (ev,) = build_evidence([{"id": "C1", "content": chunk}])
    assert "5000" in ev.whole.numbers
    for claim in (
        "The survey had 5,000 respondents in total.",
        "The survey had five thousand respondents in total.",
    ):
        assert _claim(judge, claim, chunk)["verdict"] == "supported"
