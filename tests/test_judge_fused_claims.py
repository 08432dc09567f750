"""Claims that join facts from two sentences or two chunks, as summaries and long RAG answers
write them: the numbers each fact brings, a negation in the other sentence's clause, a count
of the names just listed. Found on bench/judge_summaries.py and bench/judge_rag_answers.py's
check set, where such faithful claims were judged contradicted."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.local.rules.conflicts import numbers_attested
from ragpulse.collector.judge.local.rules.denials import negated_stems
from ragpulse.collector.judge.text.numbers import read_number_words
from ragpulse.collector.judge.text.tokens import profile, tokenise

from tests.judge_records import judged_claims


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


def _claim(judge: LocalJudge, answer: str, chunks: list[str], query: str = "What happened?") -> dict:
    found = judged_claims(judge, answer, *chunks, query=query)
    assert len(found) == 1, found
    return found[0]


STORM = (
    "Storm Elda brought gusts of up to 94 miles per hour to the west coast of Ireland overnight on Sunday, "
    "leaving more than 120,000 homes and businesses without power and forcing the closure of several major roads."
)


def test_a_negation_the_claim_restates_in_its_own_words_is_no_contradiction(judge: LocalJudge) -> None:
    answer = (
        "Storm Elda hit Ireland's west coast overnight on Sunday with gusts of up to 94 mph, cutting power "
        "to more than 120,000 homes and businesses and closing several major roads."
    )
    claim = _claim(judge, answer, [STORM])
    assert claim["verdict"] == "supported"


def test_a_negation_in_another_clause_of_the_sentence_is_no_contradiction(judge: LocalJudge) -> None:
    chunk = (
        "Plans for 1,200 new homes on the former paper mill site in Riverbend were approved by the county "
        "planning commission on Tuesday, despite objections from residents who say local roads cannot cope."
    )
    answer = "The county planning commission approved plans for 1,200 new homes on the former paper mill site in Riverbend."
    assert _claim(judge, answer, [chunk])["verdict"] == "supported"
    assert negated_stems(tokenise(chunk)) == {"cope"}


@pytest.mark.parametrize(
    ("answer", "chunk"),
    [
        ("Audit logs are retained for seven years.", "Audit logs are not retained for seven years."),
        ("The tablets should be taken with food.", "The tablets should be taken without food."),
        ("Audit logs are not retained for seven years.", "Audit logs are retained for seven years."),
    ],
)
def test_a_sentence_that_negates_the_claims_own_words_still_contradicts_it(
    judge: LocalJudge, answer: str, chunk: str
) -> None:
    assert _claim(judge, answer, [chunk])["verdict"] == "contradicted"


def test_a_number_stated_next_to_its_words_in_another_sentence_is_no_disagreement(judge: LocalJudge) -> None:
    chunk = (
        "Gusts of up to 94 mph hit the west coast on Sunday. "
        "The storm cut power to more than 120,000 homes, the utility said."
    )
    chunks = build_evidence([{"id": "C1", "content": chunk}])
    fused = profile("Gusts of up to 94 mph hit the west coast, cutting power to more than 120,000 homes.")
    assert numbers_attested(fused, chunks) == {"94", "120000"}
    changed = profile("Gusts of up to 94 mph hit the west coast, cutting power to more than 150,000 homes.")
    assert numbers_attested(changed, chunks) == {"94"}
    plans = [
        "Most beginner marathon training plans build up to 30 to 40 miles per week over 16 to 20 weeks.",
        "Most plans build the long run to a peak of 18 to 20 miles about three weeks before race day, then taper.",
    ]
    answer = (
        "For a first marathon, most training plans build to about 30 to 40 miles per week over 16 to 20 weeks, "
        "with the long run peaking at {} miles roughly three weeks before the race before you taper."
    )
    # The first sentence shares most of the claim's words and lacks 18, which the second
    # states next to the same words: the claim joins the two, it does not disagree.
    assert _claim(judge, answer.format("18 to 20"), plans)["verdict"] != "contradicted"
    assert _claim(judge, answer.format("24 to 26"), plans)["verdict"] == "contradicted"


def test_a_changed_number_is_still_contradicted(judge: LocalJudge) -> None:
    chunk = "The pharmacy opens at 9 am on weekdays. It closes at 6 pm on Saturdays."
    claim = _claim(judge, "The pharmacy opens at 8 am on weekdays.", [chunk])
    assert claim["verdict"] == "contradicted"


def test_a_claim_resting_on_two_chunks_keeps_the_joint_cap_when_the_best_chunk_reorders_its_year(
    judge: LocalJudge,
) -> None:
    chunks = [
        "Dunant's ideas were taken up by the lawyer Gustave Moynier, who served as the organisation's "
        "president for over four decades.",
        "In 1901, Henry Dunant shared the first Nobel Peace Prize with the French pacifist Frederic Passy.",
    ]
    answer = (
        "Moynier went on to serve as president for over four decades, "
        "and Dunant shared the first Nobel Peace Prize in 1901."
    )
    claim = _claim(judge, answer, chunks, query="Who founded the Red Cross?")
    model = judge.claim_model
    assert model.number_cap < claim["support_probability"] <= model.joint_number_cap


def test_a_count_of_the_names_just_listed_is_no_number(judge: LocalJudge) -> None:
    assert read_number_words(["All", "three", "shared", "it"]) == ["All", "shared", "it"]
    assert read_number_words(["three", "shared", "it"]) == ["three", "shared", "it"]
    chunk = "In 1945, Fleming, Florey and Chain shared the Nobel Prize in Physiology or Medicine."
    claim = _claim(judge, "All three shared the 1945 Nobel Prize in Physiology or Medicine.", [chunk])
    assert claim["verdict"] == "supported"
    changed = _claim(judge, "All three shared the 1948 Nobel Prize in Physiology or Medicine.", [chunk])
    assert changed["verdict"] == "contradicted"
