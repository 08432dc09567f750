"""The local judge's verdicts on controlled perturbations, and its contract."""

from __future__ import annotations

import json

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.record import SCORE_KEYS

from tests.judge_records import judged_claims

CHUNKS = [
    {
        "id": "P1",
        "content": "Access for departing staff is revoked within 24 hours of their last working day.",
    },
    {
        "id": "P2",
        "content": "Privileged access is reviewed every 90 days by the system owner and the security team.",
    },
    {"id": "P3", "content": "Visitors must sign in at reception and wear a badge at all times."},
]
QUERY = "How soon is access revoked for departing staff, and how often is privileged access reviewed?"


def rec(answer: str, chunks: list[dict] | None = None, **kw) -> dict:
    return {"trace_id": "t", "query": QUERY, "answer": answer, "chunks": chunks or CHUNKS, **kw}


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


def test_faithful_cited_answer_is_healthy(judge: LocalJudge) -> None:
    out = judge.judge(
        rec(
            "Access for departing staff is revoked within 24 hours of their last working day [1]. "
            "Privileged access is reviewed every 90 days by the system owner and the security team [2]."
        )
    )
    assert out["failure_mode"] == "healthy"
    assert out["faithfulness"] == 1.0
    assert out["citation_correctness"] == 1.0
    assert out["citation_completeness"] == 1.0
    assert out["context_precision"] == pytest.approx(2 / 3, abs=1e-3)
    assert out["answer_relevance"] == 1.0
    assert out["error"] is None


def test_changed_number_is_contradicted_noise(judge: LocalJudge) -> None:
    out = judge.judge(
        rec("Access for departing staff is revoked within 2 hours of their last working day [1].")
    )
    (claim,) = out["claims"]
    assert claim["verdict"] == "contradicted"
    assert claim["contradicting_chunk_ids"] == ["P1"]
    assert claim["source"] == "noise"
    assert out["faithfulness"] == 0.0
    assert out["citation_correctness"] == 0.0
    assert out["failure_mode"] == "generation"


def test_claim_in_no_chunk_is_a_hallucination(judge: LocalJudge) -> None:
    out = judge.judge(rec("Departing staff receive a severance bonus from the payroll department."))
    (claim,) = out["claims"]
    assert claim["verdict"] == "unsupported"
    assert claim["source"] == "hallucination"
    assert out["unsupported_claims"] == 1


def test_wrong_citation_lowers_citation_correctness(judge: LocalJudge) -> None:
    out = judge.judge(
        rec(
            "Access for departing staff is revoked within 24 hours of their last working day [3]. "
            "Privileged access is reviewed every 90 days by the system owner and the security team [2]."
        )
    )
    assert out["faithfulness"] == 1.0
    assert out["citation_correctness"] == 0.5
    assert out["citation_completeness"] == 0.5
    assert out["claims"][0]["citation_valid"] is False
    assert out["failure_mode"] == "generation"


def test_dropped_coordinated_requirement_is_incomplete(judge: LocalJudge) -> None:
    out = judge.judge(rec("Privileged access is reviewed every 90 days by the system owner [2]."))
    assert out["claims"][0]["omitted_condition"] == "the security team"
    assert out["failure_mode"] == "generation"


def test_independent_clause_left_out_is_not_an_omission(judge: LocalJudge) -> None:
    chunks = [
        {"id": "Q1", "content": "Logs are kept for five years, and the archive is located in Frankfurt."}
    ]
    out = judge.judge(rec("Logs are kept for five years [1].", chunks, query="How long are logs kept?"))
    assert out["claims"][0]["omitted_condition"] is None
    assert out["failure_mode"] == "healthy"


def test_superseded_or_non_authoritative_evidence_is_a_retrieval_failure(judge: LocalJudge) -> None:
    chunks = [
        {"id": "old", "content": CHUNKS[0]["content"], "metadata": {"status": "superseded"}},
        {"id": "note", "content": CHUNKS[2]["content"], "metadata": {"authoritative": False}},
    ]
    out = judge.judge(
        rec("Access for departing staff is revoked within 24 hours of their last working day.", chunks)
    )
    assert out["faithfulness"] == 1.0
    assert out["failure_mode"] == "retrieval"
    assert out["context_precision"] == 0.0


def test_unsupported_answer_without_usable_context_is_both(judge: LocalJudge) -> None:
    chunks = [{"id": "X", "content": "The cafeteria opens at eight and serves vegetarian meals."}]
    out = judge.judge(rec("Access is revoked within 24 hours.", chunks))
    assert out["failure_mode"] == "both"


def test_uncited_answer_has_null_citation_scores_unless_required() -> None:
    answer = "Access for departing staff is revoked within 24 hours of their last working day."
    assert get_judge("local").judge(rec(answer))["citation_completeness"] is None
    strict = get_judge("local", require_citations=True)
    assert strict.judge(rec(answer))["citation_completeness"] == 0.0
    assert strict.judge_id != get_judge("local").judge_id


def test_explicit_citations_with_offsets() -> None:
    answer = "Access is revoked within 24 hours of the last working day. Privileged access is reviewed every 90 days."
    cut = answer.index("Privileged")
    cits = [{"doc_id": "P1", "start": 0, "end": cut - 1}, {"doc_id": "P3", "start": cut, "end": len(answer)}]
    out = get_judge("local").judge(rec(answer, citations=cits))
    assert [c["cited_chunk_ids"] for c in out["claims"]] == [["P1"], ["P3"]]
    assert out["citation_correctness"] == 0.5


def test_bad_records_become_error_records_not_exceptions(judge: LocalJudge) -> None:
    for bad in (
        {"trace_id": "b1"},
        {"trace_id": "b2", "answer": "x", "chunks": "nope"},
        ["not", "a", "dict"],
    ):
        out = judge.judge(bad)  # type: ignore[arg-type]
        assert out["error"]
        assert all(out[k] is None for k in SCORE_KEYS)
        assert out["failure_mode"] is None


def test_deterministic_and_json_serialisable(judge: LocalJudge) -> None:
    r = rec("Access for departing staff is revoked within 24 hours [1]. Visitors wear a badge [3].")
    a, b = judge.judge(r), judge.judge(r)
    for out in (a, b):
        out.pop("judge_latency_ms")
    assert a == b
    json.dumps(a)
    assert a["judge_id"].startswith("local-5.0:")


def test_judge_id_pins_settings() -> None:
    assert get_judge("local").judge_id == get_judge("local").judge_id
    assert get_judge("local", threshold=0.6).judge_id != get_judge("local").judge_id


def test_dropped_verb_phrase_is_incomplete(judge: LocalJudge) -> None:
    chunks = [
        {
            "id": "A1",
            "content": "Audit logs are protected against modification and kept online for two years.",
        }
    ]
    out = judge.judge(
        rec("Audit logs are kept online for two years [1].", chunks, query="How are audit logs kept?")
    )
    assert out["claims"][0]["omitted_condition"] == "protected against modification"
    assert out["failure_mode"] == "generation"
    full = judge.judge(
        rec("Audit logs are protected against modification and kept online for two years [1].", chunks)
    )
    assert all(c["omitted_condition"] is None for c in full["claims"])


def test_frequency_words_are_not_numbers(judge: LocalJudge) -> None:
    chunks = [
        {"id": "R1", "content": "The recovery plan is tested twice a year and the objective is 4 hours."}
    ]
    out = judge.judge(
        rec("The recovery objective is 2 hours [1].", chunks, query="What is the recovery objective?")
    )
    assert out["claims"][0]["verdict"] == "contradicted"


def test_a_number_in_another_written_form_is_the_same_number(judge: LocalJudge) -> None:
    """Digits, number words, thousands separators and scale words: "4-6" is "four to six",
    "1.5 million" is "1,500,000" (matched, not contradicted)."""
    chunks = [
        {
            "id": "N1",
            "content": "Routine passport service takes four to six weeks. The agency processed "
            "1,500,000 applications in 2019 and hired two thousand staff.",
        }
    ]
    for answer in (
        "Routine passport service takes 4-6 weeks [1].",
        "The agency processed 1.5 million applications in 2019 [1].",
        "The agency hired 2,000 staff [1].",
    ):
        (claim,) = judge.judge(rec(answer, chunks, query="How long does a passport take?"))["claims"]
        assert claim["verdict"] == "supported", (answer, claim)
    changed = judge.judge(rec("The agency processed 2.5 million applications in 2019 [1].", chunks))
    assert [c["verdict"] for c in changed["claims"]] == ["contradicted"]


def test_numbers_written_with_scale_words_have_one_value() -> None:
    from ragpulse.collector.judge.text.tokens import profile

    assert profile("1.5 million users").numbers == profile("1,500,000 users").numbers == {"1500000"}
    assert profile("1.5 million users").stems == profile("1,500,000 users").stems == ["1500000", "user"]
    assert profile("four to six weeks").numbers == profile("4-6 weeks").numbers == {"4", "6"}
    # abbreviated scale words, case-sensitive: "m" after a number is metres
    assert profile("$1.2bn").numbers == profile("1.2 billion").numbers == {"1200000000"}
    assert profile("1.5M downloads").numbers == {"1500000"} and profile("30k users").numbers == {"30000"}
    assert profile("a 500 m race").numbers == {"500"} and profile("in 2020 B").numbers == {"2020"}
    # compounds of number words
    assert profile("twenty-five years").numbers == profile("25 years").numbers == {"25"}
    assert (
        profile("the twenty-first century").stems == profile("the 21st century").stems == ["21st", "centur"]
    )
    # An ordinal is its own number, in words or digits ("3rd" is the tokens "3" and "rd"), not
    # the cardinal: "first" does not match the 1 of "1-1".
    assert profile("the first album").stems == profile("the 1st album").stems == ["1st", "album"]
    assert profile("the first album").numbers == {"1st"} and profile("ended 1-1").numbers == {"1"}
    # ... but a date's day is the day, however it is written
    days = {"12", "2004"}
    assert profile("June 12th, 2004").numbers == profile("the 12th of June 2004").numbers == days
    assert profile("12th June 2004").numbers == profile("12 June 2004").numbers == days


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("The drug not only reduces pain but also lowers fever.", "supported"),
        ("Not only does the drug reduce pain, it also lowers fever.", "supported"),
        ("The museum did not reopen until June, after renovations.", "supported"),
        ("The drug does not reduce pain.", "contradicted"),
        ("The museum did not reopen in June.", "contradicted"),
        ("The bridge is still open to cars.", "contradicted"),  # "no longer" negates
    ],
)
def test_negation_idioms_that_negate_nothing(claim: str, verdict: str) -> None:
    chunk = (
        "The drug reduces pain and lowers fever. The museum reopened in June after renovations. "
        "The bridge is no longer open to cars."
    )
    assert judged_claims(get_judge("local"), claim, chunk)[0]["verdict"] == verdict
