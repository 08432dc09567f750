"""Local judge 3.0: word forms the stemmer relates, and a necessary condition read as sufficient."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.local.rules.conflicts import asserts_sufficiency, sufficiency_conflict
from ragpulse.collector.judge.text.tokens import profile, stem

from tests.judge_records import judged_claims

REQUIRES_BOTH = "Earlier deletion requires release of all active legal holds and documented authorization from the records officer."


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


def _claims(
    judge: LocalJudge, answer: str, chunks: list[str], query: str = "When may logs be deleted early?"
):
    return judged_claims(judge, answer, *chunks, query=query)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("retained", "retention"),
        ("detain", "detention"),
        ("held", "holds"),
        ("wrote", "writes"),
        ("died", "dies"),
    ],
)
def test_related_forms_share_a_stem(a: str, b: str) -> None:
    assert stem(a) == stem(b)


def test_unrelated_words_keep_their_own_stems() -> None:
    assert stem("certain") != stem("retain")
    assert stem("founded") != stem("find")


def test_sufficiency_is_recognised_in_words_and_phrases() -> None:
    assert asserts_sufficiency(profile("Legal-hold release alone is sufficient for early deletion."))
    assert asserts_sufficiency(profile("Approval by itself permits deletion."))
    assert asserts_sufficiency(profile("A manager's sign-off on its own is enough."))
    assert not asserts_sufficiency(profile("Legal-hold release permits early deletion."))


def test_sufficient_against_one_requirement_among_others_is_contradicted(judge: LocalJudge) -> None:
    claim = _claims(judge, "Legal-hold release alone is sufficient for early deletion.", [REQUIRES_BOTH])[0]
    assert claim["verdict"] == "contradicted"
    assert claim["contradicting_chunk_ids"] == ["C1"]
    assert claim["support_probability"] <= judge.claim_model.number_cap


def test_sufficient_against_a_single_requirement_is_not_supported() -> None:
    chunk = build_evidence(
        [{"id": "C1", "content": "Early deletion requires release of all active legal holds."}]
    )[0]
    cp = profile("Legal-hold release alone is sufficient for early deletion.")
    assert sufficiency_conflict(cp, chunk) == "unsupported"


def test_a_sentence_that_grants_sufficiency_supports_it(judge: LocalJudge) -> None:
    claim = _claims(
        judge,
        "Legal-hold release alone is sufficient for early deletion.",
        ["Release of the legal hold alone is sufficient for early deletion of the logs."],
    )[0]
    assert claim["verdict"] == "supported"


def test_permits_against_requires_stays_supported_with_the_omitted_condition(judge: LocalJudge) -> None:
    claim = _claims(judge, "Legal-hold release permits early deletion.", [REQUIRES_BOTH])[0]
    assert claim["verdict"] == "supported"
    assert claim["omitted_condition"] == "documented authorization from the records officer"


def test_retention_supports_retained(judge: LocalJudge) -> None:
    claim = _claims(
        judge,
        "Transaction logs are retained for five years.",
        ["Normal retention is five years."],
        query="What is the transaction-log retention period?",
    )[0]
    assert claim["verdict"] == "supported"
