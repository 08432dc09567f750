"""The sampler's shortcuts decide exactly what their plain readings decide.

``looks_like_refusal`` skips the refusal pattern for ASCII answers that hold none of the
literals every match contains, and ``Sampler`` hashes trace ids from a copy of the seed's
hash state: both must agree with the plain reading on every input, so sampling decisions
are unchanged. The plain refusal reading is the pattern on the lowercased text behind the
trigger-word test (a match needs a whole trigger word: the pattern alone has no closing
word boundary, so 'i don't knownote' matches it, and has never counted as a refusal).
"""

from __future__ import annotations

import itertools
import random

import pytest
from ragpulse.collector.ingest.sampling import (
    _PUNCT,
    _REFUSAL,
    _TRIGGERS,
    Sampler,
    SamplingPolicy,
    looks_like_refusal,
    trace_hash,
)

# Every phrase the refusal pattern matches, spelled out from its alternatives.
_PHRASES = [
    *(f"i {a} {b}" for a, b in itertools.product(
        ("do not", "don't", "cannot", "can't"), ("know", "answer", "find", "help"))),
    *(f"i{a} {b}" for a, b in itertools.product(("'m", " am"), ("sorry", "unable", "not able"))),
    *(f"{a} {b}" for a, b in itertools.product(
        ("cannot", "can't", "unable to"), ("answer", "determine", "find", "provide"))),
    "not able to", "not enough information to",
    *(f"{a} not {b}" for a, b in itertools.product(
        ("do", "does"), ("establish", "contain", "mention", "say", "specify", "provide"))),
    "no information", "no relevant information",
    *(f"{a} {b}" for a, b in itertools.product(("insufficient", "not enough"), ("information", "context"))),
    "not mentioned in", "not covered in", "not stated in",
]  # fmt: skip
# Words around them: the pattern's own words (near misses), and ordinary ones.
_WORDS = sorted({w for p in _PHRASES for w in p.split()} | {
    "notice", "knot", "cannotation", "unabled", "informational", "insufficiently", "i", "am", "the",
    "policy", "retention", "logs", "are", "kept", "five", "years", "[1].", "nothing", "note",
})  # fmt: skip
_SEPARATORS = [" ", "  ", ", ", ". ", "\n", "\t", "-", "'", ""]


def _reference(answer: str) -> bool:
    """The trigger words, then the pattern: on str for every text (the function under test
    reads ASCII on bytes)."""
    text = answer[:2000].lower()
    if not answer or _TRIGGERS.isdisjoint(text.translate(_PUNCT).split()):
        return False
    return _REFUSAL.search(text) is not None


def _texts(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        parts = [rng.choice(_WORDS) for _ in range(rng.randrange(0, 12))]
        if rng.random() < 0.5:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(_PHRASES))
        text = "".join(p + rng.choice(_SEPARATORS) for p in parts)
        if rng.random() < 0.3:
            text = "".join(c.upper() if rng.random() < 0.5 else c for c in text)
        out.append(text)
    return out


def test_every_phrase_of_the_pattern_is_a_refusal_in_any_case_and_place() -> None:
    for phrase in _PHRASES:
        for text in (phrase, phrase.upper(), f"Sorry. {phrase.title()}.", f"x ({phrase})"):
            assert looks_like_refusal(text) is True, text
            assert _reference(text) is True, text


def test_refusal_shortcut_agrees_with_the_pattern_on_random_texts() -> None:
    rng = random.Random(7)
    texts = _texts(rng, 6000)
    found = [looks_like_refusal(t) for t in texts]
    assert found == [_reference(t) for t in texts]
    assert 0.2 < sum(found) / len(found) < 0.8  # both sides are exercised


@pytest.mark.parametrize(
    "text",
    [
        "ınsufficient context",  # dotless i: the pattern's IGNORECASE matches it as i
        "no ınformation here",
        "ı'm ſorry",
        "the ſources do not ſay",
        "données: not covered in the policy",
        "x" * 1990 + " i don't know",  # the phrase crosses the 2,000-character cut
        "x" * 1985 + " i don't know",
        "",
    ],
)
def test_refusal_shortcut_agrees_with_the_pattern_on_odd_texts(text: str) -> None:
    assert looks_like_refusal(text) == _reference(text)


def test_the_samplers_hash_is_trace_hash() -> None:
    rng = random.Random(3)
    for seed in ("ragpulse", "", "s", "sé:ed/ü" * 20):
        sampler = Sampler(SamplingPolicy(rate=0.5, seed=seed))
        ids = [f"{rng.getrandbits(128):032x}" for _ in range(300)] + ["", "x", "ü" * 40]
        assert [sampler._hash(t) for t in ids] == [trace_hash(t, seed) for t in ids]
