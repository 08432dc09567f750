"""A claim segment that no chunk says anything about takes the one-chunk rule away."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge.local.claim_features import ChunkIndex, claim_evidence
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.rules.approximate import claim_profile
from ragpulse.collector.judge.local.rules.segments import unmatched_segment
from ragpulse.collector.judge.local.support import claim_view, load_model

SYMPTOMS = "When symptoms appear, they can include fatigue, bone pain, muscle weakness and mood changes."


def _evidence(claim: str, chunk: str):
    chunks = build_evidence([{"id": "C1", "content": chunk}])
    index = ChunkIndex(chunks)
    view = claim_view(claim_profile(claim, chunks, index.all_numbers), frozenset())
    return view, index


@pytest.mark.parametrize(
    ("claim", "unmatched"),
    [
        ("Symptoms can include fatigue, bone pain, muscle weakness, hair loss and mood changes.", True),
        ("Symptoms include fatigue and bone pain, which usually last for several decades.", True),
        ("Symptoms can include fatigue, bone pain, muscle weakness and mood changes.", False),
        # one stem is too little: "loss" alone may be a paraphrase
        ("Symptoms can include fatigue, bone pain, muscle weakness, loss and mood changes.", False),
        # a segment whose words are all new while the rest is not covered either: nothing to single out
        ("Shipping is free, with delivery in three days and returns accepted.", False),
    ],
)
def test_unmatched_segment(claim: str, unmatched: bool) -> None:
    view, index = _evidence(claim, SYMPTOMS)
    assert unmatched_segment(claim, view.keys, index.all_keys) == unmatched


def test_an_unmatched_segment_leaves_the_verdict_to_the_probability() -> None:
    model = load_model()
    claim = "Symptoms can include fatigue, bone pain, muscle weakness, hair loss and mood changes."
    view, index = _evidence(claim, SYMPTOMS)
    without_text = claim_evidence(view, index, model)
    with_text = claim_evidence(view, index, model, claim)
    assert without_text.one_chunk_supports  # the pair model alone would settle it
    assert with_text.segment_missing and not with_text.one_chunk_supports
    assert with_text.features == without_text.features
