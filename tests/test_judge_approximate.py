"""Rounded and qualified numbers in claims read as the evidence values they stand for."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.rules.approximate import claim_profile
from ragpulse.collector.judge.text.tokens import profile

from tests.judge_records import judged_claims

CHUNK = (
    "The agency processed 1,523,400 applications in 2019, up from 1,210,000 in 2018. "
    "About 48.7 percent of applicants were women. The office opened in 2013 and employs 312 staff. "
    "The band formed in 1994 and the bridge was completed in 1883. The firm has offices in 35 countries."
)
EVIDENCE = build_evidence([{"id": "C1", "content": CHUNK}])


def _read(claim: str, content: str | None = None) -> frozenset[str]:
    chunks = EVIDENCE if content is None else build_evidence([{"id": "C1", "content": content}])
    return claim_profile(claim, chunks).numbers


@pytest.mark.parametrize(
    ("claim", "read_as"),
    [
        ("The agency processed about 1.5 million applications", "1523400"),
        ("The agency processed over 1.5 million applications", "1523400"),
        ("The agency processed roughly 1.52 million applications", "1523400"),
        ("The agency processed 1.5 million applications", "1523400"),  # two significant digits
        ("About 49 percent of applicants were women", "48.7"),
        ("49% of applicants were women", "48.7"),
        ("Nearly 50 percent of applicants were women", "48.7"),
        ("The office employs more than 300 staff", "312"),
        ("The office employs around 310 people", "312"),
        ("The firm has offices in more than 30 countries", "35"),
        ("The band formed in the 1990s", "1994"),
        ("The band formed in the mid-1990s", "1994"),
        ("The bridge was completed in the 19th century", "1883"),
        ("The bridge was completed in the late 1800s", "1883"),
    ],
)
def test_an_approximation_reads_as_the_evidence_value(claim: str, read_as: str) -> None:
    cp = claim_profile(claim, EVIDENCE)
    assert read_as in cp.numbers, cp.numbers
    assert read_as in cp.stem_set  # the coverage features see it too
    assert not {"about", "over", "mid", "late", "century"} & set(cp.tokens)  # qualifiers went with it


@pytest.mark.parametrize(
    "claim",
    [
        "The agency processed 2.5 million applications",  # a different value
        "The agency processed 2 million applications",  # one significant digit: no rounding
        "The office employs 300 staff",  # likewise
        "About 26 percent of applicants were women",  # about 26 is not 25 or 48.7
        "The office employs more than 320 staff",  # 312 is not more than 320
        "The office employs nearly 300 staff",  # 312 is not nearly 300
        "The office opened in 2010",  # a year is exact
        "About 60 percent of applicants were women",  # within rounding of nothing
        "The band formed in the early 1990s",  # 1994 is the mid-1990s
        "The bridge was completed in the 18th century",
        "The agency played at the under-18 level",  # "under" names an age group
        "The bridge took about 1.5 million applications",  # 1,523,400 is another subject's
    ],
)
def test_other_numbers_stay_as_written(claim: str) -> None:
    assert _read(claim) == profile(claim).numbers


def test_the_evidence_value_is_bounded_by_a_tenth_of_the_claim() -> None:
    # "about 100" rounds anything from 50 to 149 at one significant digit; it is read as 95,
    # not as 60 (a long chunk has many numbers to meet by chance).
    assert "95" in _read("She starred in about 100 films.", "She starred in 95 films.")
    assert "60" not in _read("She starred in about 100 films.", "She starred in 60 films.")


def test_a_rounded_or_qualified_number_is_not_a_contradiction() -> None:
    judge = get_judge("local")

    def verdict(answer: str) -> str:
        return judged_claims(judge, answer, CHUNK)[0]["verdict"]

    for faithful in (
        "The agency processed about 1.5 million applications in 2019.",
        "The office employs more than 300 staff.",
        "About 49% of applicants were women.",
    ):
        assert verdict(faithful) == "supported", faithful
    assert verdict("The agency processed 2.5 million applications in 2019.") == "contradicted"
    assert verdict("The office employs about 400 staff.") == "contradicted"


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("About a third of applicants apply in spring.", "supported"),  # 35 percent
        ("Nearly half of applicants are women.", "supported"),  # 48.7 percent
        ("About three quarters renew online.", "supported"),  # 74 percent
        ("About two thirds of applicants apply in spring.", "contradicted"),
        ("More than half of applicants are women.", "unsupported"),  # 48.7 is not more than half
        ("He finished third in 2004.", "supported"),  # an ordinal, not a fraction
        ("About 1 in 3 applicants apply in spring.", "supported"),  # 35 percent
        ("Nearly one in two applicants are women.", "supported"),  # 48.7 percent
        ("Three out of four applicants renew online.", "supported"),  # 74 percent
        ("About 2 in 3 applicants apply in spring.", "contradicted"),
    ],
)
def test_a_fraction_or_a_share_reads_as_the_percentage_it_names(claim: str, verdict: str) -> None:
    chunk = (
        "About 35 percent of applicants apply in spring, and 48.7 percent are women. "
        "Roughly 74 percent renew online. He finished third in 2004."
    )
    assert judged_claims(get_judge("local"), claim, chunk)[0]["verdict"] == verdict


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("Routine processing takes six weeks.", "supported"),  # 42 days
        ("The trail is about 62 miles long.", "supported"),  # 100 km
        ("The pack weighs 22 pounds.", "supported"),  # 10 kg
        ("The course lasts about three months.", "supported"),  # 12 weeks
        ("The break is 1.5 hours.", "supported"),  # 90 minutes
        ("Routine processing takes six months.", "contradicted"),
        ("The trail is 100 miles long.", "contradicted"),  # the number of another unit
        ("The course lasts 12 months.", "contradicted"),
    ],
)
def test_a_quantity_in_another_unit_is_converted(claim: str, verdict: str) -> None:
    chunk = "Routine processing takes 42 days. The trail is 100 km long and the pack weighs 10 kg. The course lasts 12 weeks and the break is 90 minutes."
    assert judged_claims(get_judge("local"), claim, chunk)[0]["verdict"] == verdict


def test_a_small_number_in_another_unit_is_left_to_chance() -> None:
    # "two days" elsewhere does not make "two years" another quantity: small numbers meet often.
    chunks = build_evidence(
        [{"id": "C1", "content": "He resigned and two days later he was back in Coimbra."}]
    )
    assert claim_profile("He resigned and was back two years later.", chunks).numbers == {"2"}


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("She finished 1st in the 2004 race.", "She finished first in the 2004 race."),
        ("She finished first in the 2004 race.", "She finished 1st in the 2004 race."),
        ("The team won its 3rd title in 2010.", "The team won its third title in 2010."),
        ("He came sixth in the final.", "He came 6th in the final."),
    ],
)
def test_an_ordinal_in_words_or_digits_is_one_number(claim: str, chunk: str) -> None:
    assert profile(claim).numbers == profile(chunk).numbers
    assert judged_claims(get_judge("local"), claim, chunk)[0]["verdict"] == "supported"


def test_an_ordinal_is_not_the_cardinal() -> None:
    # "first" is 1st, not the 1 of a 1-1 score.
    assert "1st" in profile("The visitors scored first.").numbers
    assert "1st" not in profile("The match ended 1-1.").numbers
