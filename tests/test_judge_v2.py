"""The local judge v2: calibrated support probability, response verdicts, and the
hand-made misses of v1 (negation read as support, joint support by two chunks read as
unsupported, an off-topic but faithful answer scored relevant, meta sentences and
restated questions judged as claims)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.claim_features import CLAIM_FEATURES
from ragpulse.collector.judge.local.claim_model import load_claim_model
from ragpulse.collector.judge.local.claims import extract_claims
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.local.question_type import asks_time
from ragpulse.collector.judge.service.worker import judgment_rows
from ragpulse.collector.judge.tiers.tiered import TieredJudge

from tests.judge_records import record

WEIGHTS = Path(__file__).resolve().parents[1] / "collector" / "judge" / "local" / "weights" / "claim-v4.json"


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


RETENTION = "How long are audit logs retained?"


def judged(judge: LocalJudge, answer: str, chunks: list[str], query: str = RETENTION) -> dict:
    return judge.judge(record(answer, *chunks, query=query))


def test_every_claim_carries_a_probability_and_the_record_a_response_verdict(judge: LocalJudge) -> None:
    chunks = ["Audit logs are retained for five years.", "Backups run nightly."]
    out = judged(judge, "Audit logs are retained for five years [1]. The office is in Paris.", chunks)
    probs = [c["support_probability"] for c in out["claims"]]
    assert all(0.0 <= p <= 1.0 for p in probs)
    assert probs[0] > probs[1]
    assert [c["verdict"] for c in out["claims"]] == ["supported", "unsupported"]
    assert out["response_verdict"] == "hallucinated"
    assert out["judge_id"].startswith("local-5.0:")


def test_negation_of_the_cited_sentence_is_a_contradiction_not_a_valid_citation(judge: LocalJudge) -> None:
    chunks = ["Audit logs are retained for five years in the primary archive.", "Backups run nightly."]
    out = judged(judge, "Audit logs are not retained for five years [1].", chunks)
    claim = out["claims"][0]
    assert claim["verdict"] == "contradicted"
    assert claim["contradicting_chunk_ids"] == ["C1"]
    assert claim["citation_valid"] is False
    assert claim["support_probability"] < judge.threshold
    assert out["response_verdict"] == "hallucinated"


def test_a_claim_supported_jointly_by_two_chunks_cites_both_validly(judge: LocalJudge) -> None:
    chunks = [
        "Audit logs are retained for five years.",
        "The archive for audit logs is located in Frankfurt.",
    ]
    answer = "Audit logs are retained for five years in the Frankfurt archive [1][2]."
    out = judged(judge, answer, chunks, query="Where are audit logs stored and for how long?")
    assert out["claims"][0]["verdict"] == "supported"
    assert out["claims"][0]["supporting_chunk_ids"] == ["C1", "C2"]
    assert out["citation_correctness"] == 1.0


def test_an_off_topic_but_faithful_answer_is_not_relevant(judge: LocalJudge) -> None:
    chunks = ["Audit logs are retained for five years. Backups run nightly at midnight."]
    out = judged(judge, "Backups run nightly at midnight [1].", chunks)
    assert out["faithfulness"] == 1.0
    assert out["answer_relevance"] == 0.0
    on_topic = judged(judge, "They are kept for five years [1].", chunks)
    assert on_topic["answer_relevance"] == 1.0


def test_a_claim_referring_back_shares_the_topic_of_the_claim_before_it(judge: LocalJudge) -> None:
    chunks = [
        "RMS Titanic sank in the early hours of 15 April 1912 in the North Atlantic.",
        "The ship struck an iceberg at 11:40 pm on 14 April. Its wreck lies 3,800 metres down.",
    ]
    query = "When did the Titanic sink?"
    answer = "The Titanic sank on 15 April 1912 [1]. It had struck an iceberg the night before [2]."
    out = judged(judge, answer, chunks, query=query)
    assert [c["on_topic"] for c in out["claims"]] == [True, True]
    assert out["answer_relevance"] == 1.0
    # a back reference to an off-topic claim stays off topic
    off = judged(
        judge,
        "The ship struck an iceberg at 11:40 pm [2]. Its wreck lies 3,800 metres down [2].",
        chunks,
        query=query,
    )
    assert [c["on_topic"] for c in off["claims"]] == [False, False]


def test_a_quantity_question_answered_without_a_quantity_is_not_relevant(judge: LocalJudge) -> None:
    chunks = ["Audit logs are retained in the primary archive for five years."]
    out = judged(judge, "Audit logs are retained in the primary archive.", chunks)
    assert out["claims"][0]["verdict"] == "supported"
    assert out["answer_relevance"] == 0.0


def test_a_time_question_answered_without_a_time_is_not_relevant(judge: LocalJudge) -> None:
    chunks = ["Signing keys are rotated by the security team after any suspected exposure."]
    query = "When are signing keys rotated?"
    missed = judged(judge, "Signing keys are rotated by the security team [1].", chunks, query=query)
    assert missed["claims"][0]["verdict"] == "supported"
    assert missed["answer_relevance"] == 0.0
    answered = judged(
        judge, "Signing keys are rotated after any suspected exposure [1].", chunks, query=query
    )
    assert answered["answer_relevance"] == 1.0
    # "When ..." that sets a condition asks no time.
    conditional = "When I rotate a signing key, who rotates it?"
    assert (
        judged(judge, "The security team rotates them [1].", chunks, query=conditional)["answer_relevance"]
        == 1.0
    )


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When are keys rotated?", True),
        ("So when did the outage start?", True),
        ("What date is the audit?", True),
        ("At what time do backups run?", True),
        ("When I reset my password, do I need approval?", False),
        ("What happens when a laptop is lost?", False),
        ("Who approves password resets?", False),
    ],
)
def test_time_questions_are_read_from_their_opening(query: str, asks: bool) -> None:
    assert asks_time(query) is asks


def test_questions_meta_sentences_and_closers_are_not_claims() -> None:
    answer = (
        "What is the capital of France? Here is what I found in the documents. "
        "The capital of France is Paris [1]. Let me know if you have other questions."
    )
    claims = extract_claims(answer, ["C1"]).claims
    assert [c.text for c in claims] == ["The capital of France is Paris."]
    assert claims[0].citations == ["C1"]
    kept = extract_claims("Here is the rule: logs are kept for five years.", []).claims
    assert len(kept) == 1


def test_packaged_claim_model_is_well_formed_and_monotone() -> None:
    data = json.loads(WEIGHTS.read_text())
    model = load_claim_model()
    assert tuple(data["features"]) == CLAIM_FEATURES
    assert 0.0 < model.weak <= model.threshold < 1.0
    assert 0.0 < model.number_cap < model.threshold
    raws = [i / 100 for i in range(101)]
    cal = [model.calibrate(r) for r in raws]
    assert all(b >= a for a, b in zip(cal, cal[1:], strict=False))
    assert 0.0 <= cal[0] and cal[-1] <= 1.0


def test_a_claim_number_missing_from_its_evidence_caps_the_probability(judge: LocalJudge) -> None:
    chunks = [
        "Service account credentials are rotated every 180 days and after any suspected exposure.",
        "Lost laptops are reported to the service desk within 4 hours.",
    ]
    answer = "Service account credentials are rotated every 4 days and after any suspected exposure [1]."
    claim = judged(judge, answer, chunks, query="When are service account credentials rotated?")["claims"][0]
    assert claim["verdict"] != "supported"
    assert claim["support_probability"] <= judge.claim_model.number_cap


def test_a_number_another_chunk_has_in_context_is_capped_at_the_joint_rate(judge: LocalJudge) -> None:
    chunks = [
        "Backups of the billing database are kept in the Frankfurt archive.",
        "Billing backups are kept for 7 years under the retention schedule.",
    ]
    answer = "Backups of the billing database are kept for 7 years in the Frankfurt archive [1]."
    out = judged(judge, answer, chunks, query="How long are billing backups kept?")
    claim = out["claims"][0]
    model = judge.claim_model
    # The joint cap is the supported rate of such dev claims (about half): whether it falls
    # just under or just over the threshold is the fit's, so only its order with the plain
    # cap is pinned, and that the claim is capped in the joint cell, not the plain one.
    assert model.number_cap < model.joint_number_cap
    assert model.number_cap < claim["support_probability"] <= model.joint_number_cap
    # The same claim whose 7 is only a count of something else in the other chunk.
    chunks[1] = "The archive has 7 floors and opened in 2004."
    swapped = judged(judge, answer, chunks, query="How long are billing backups kept?")["claims"][0]
    assert swapped["verdict"] != "supported"
    assert swapped["support_probability"] <= model.number_cap


def test_an_ordinal_the_chunk_words_otherwise_is_capped_at_its_own_rate(judge: LocalJudge) -> None:
    chunks = ["RMS Titanic sank in April 1912 in the North Atlantic, four days into her maiden voyage."]
    model = judge.claim_model
    assert model.number_cap < model.ordinal_number_cap < model.threshold
    first = judged(judge, "The Titanic sank in April 1912, four days into its first voyage.", chunks)
    claim = first["claims"][0]
    assert claim["verdict"] == "unsupported"  # not contradicted: the chunk has no ordinal to differ
    assert model.number_cap < claim["support_probability"] <= model.ordinal_number_cap
    chunks = ["RMS Titanic sank in April 1912, four days into her first voyage."]
    second = judged(judge, "The Titanic sank in April 1912, four days into its second voyage.", chunks)
    assert second["claims"][0]["verdict"] == "contradicted"  # ordinals that differ
    assert second["claims"][0]["support_probability"] <= model.ordinal_number_cap


@pytest.mark.parametrize("key", ["joint_number_cap", "ordinal_number_cap"])
def test_a_weights_file_without_a_cap_caps_its_cell_at_the_number_cap(tmp_path: Path, key: str) -> None:
    packaged = (
        Path(__file__).resolve().parents[1] / "collector" / "judge" / "local" / "weights" / "claim-v4.json"
    )
    weights = json.loads(packaged.read_text())
    weights.pop(key)
    path = tmp_path / "claim.json"
    path.write_text(json.dumps(weights))
    model = load_claim_model(path)
    assert getattr(model, key) == model.number_cap
    feats = [0.0] * len(CLAIM_FEATURES)
    feats[CLAIM_FEATURES.index("num_miss")] = 1.0
    feats[0] = 1.0
    plain = model.probability(feats)
    assert plain <= model.number_cap
    if key == "joint_number_cap":
        assert model.probability(feats, numbers_elsewhere=True) == plain
    else:
        assert model.probability(feats, ordinals=True) == plain


def test_tiered_judge_escalates_by_the_configured_probability_band(judge: LocalJudge) -> None:
    tiered = TieredJudge("openai/gpt-4o-mini", sample_rate=0.0, borderline=(0.3, 0.7))
    try:
        local = {"claims": [{"support_probability": 0.55, "confidence": 0.99}], "abstained": False}
        assert tiered.escalation("t", local) == "borderline"
        assert tiered.escalation("t", {"claims": [{"support_probability": 0.95}], "abstained": False}) is None
        narrow = TieredJudge("openai/gpt-4o-mini", sample_rate=0.0, borderline=(0.5, 0.52))
        assert narrow.escalation("t", local) is None
        assert narrow.judge_id != tiered.judge_id
        narrow.close()
    finally:
        tiered.close()


def test_rag_claims_rows_store_the_support_probability(judge: LocalJudge) -> None:
    out = judged(judge, "Audit logs are kept for five years [1].", ["Audit logs are kept for five years."])
    _, rows = judgment_rows({"trace_id": "t", "service": "s"}, out, out["judge_id"], 1.0, 0)
    assert rows[0]["support_probability"] == out["claims"][0]["support_probability"]
    llm_like = dict(out, claims=[dict(out["claims"][0], support_probability=None)])
    _, rows = judgment_rows({"trace_id": "t", "service": "s"}, llm_like, out["judge_id"], 1.0, 0)
    assert rows[0]["support_probability"] is None


def test_a_faithful_answer_formatted_as_a_markdown_list_is_faithful(judge: LocalJudge) -> None:
    """An LLM's usual formatting (a source prefix, a meta opening, numbered items with bold
    labels, a nested list under an introduction, a closer) adds no claim to verify."""
    chunks = [
        {
            "id": "C1",
            "content": "Hiccups are caused by involuntary contractions of the diaphragm. Each contraction is "
            "followed by a sudden closure of the vocal cords, which produces the hic sound.",
        },
        {
            "id": "C2",
            "content": "Common triggers for short-term hiccups include eating a large meal, drinking alcohol "
            "or carbonated beverages, and sudden excitement. Hiccups are usually harmless.",
        },
    ]
    answer = (
        "Based on the passages provided, here are the main causes of hiccups:\n\n"
        "1. **Diaphragm contractions**: Hiccups are caused by involuntary contractions of the diaphragm\n"
        "2. **Vocal cord closure** - each contraction is followed by a sudden closure of the vocal cords\n"
        "3. Common triggers include:\n"
        "   - eating a large meal\n"
        "   - drinking alcohol or carbonated beverages\n\n"
        "Overall, hiccups are usually harmless. I hope this helps!"
    )
    out = judge.judge({"trace_id": "md", "query": "What causes hiccups?", "answer": answer, "chunks": chunks})
    assert [c["text"] for c in out["claims"]] == [
        "Diaphragm contractions: Hiccups are caused by involuntary contractions of the diaphragm.",
        "Vocal cord closure - each contraction is followed by a sudden closure of the vocal cords.",
        "Common triggers include: eating a large meal.",
        "Common triggers include: drinking alcohol or carbonated beverages.",
        "Hiccups are usually harmless.",
    ]
    assert all(c["verdict"] == "supported" for c in out["claims"])
    assert out["response_verdict"] == "faithful"
