"""A comparison flipped: "more than 10%" against "less than 10%", "before the storm" against
"after the storm", "people over 65" against "people under 65".

The words that carry a comparison ("more", "less", "over", "under", "before", "after") are
function words: they have no content stem, so neither coverage nor the antonym rule
(:mod:`.conflicts`) sees them, and a claim that flips one keeps every content word of its
sentence. This rule reads the claim's comparison words with the word they compare against
(the *anchor*: the next number or content word, past "than", "the", "a" and "$", else a
content word among the two before it: "prices were higher in 2022"), and finds
the sentence saying the opposite comparison against the same anchor without saying the
claim's own. The caller applies it to the chunk sentence the claim rests on.
"""

from __future__ import annotations

from ...text.tokens import STOPWORDS, TextProfile, case_forms, skip_past

__all__ = ["OPPOSITES", "comparison_flip", "may_flip"]

_PAIRS = (
    ("more", "less"),
    ("more", "fewer"),
    ("over", "under"),
    ("above", "below"),
    ("before", "after"),
    ("within", "after"),
    ("higher", "lower"),
    ("earlier", "later"),
    ("maximum", "minimum"),
)
OPPOSITES: dict[str, frozenset[str]] = {
    w: frozenset(b if a == w else a for a, b in _PAIRS if w in (a, b)) for pair in _PAIRS for w in pair
}
# Between a comparison word and its anchor ("more than 10%", "before the storm", "over $5").
_SKIP = frozenset(("than", "the", "a", "an", "$"))
_TRIGGERS = case_forms(OPPOSITES)
# Each comparison word, in the cases a text writes it, to its opposites in those cases.
_OPPOSITE_TRIGGERS = {v: case_forms(OPPOSITES[w]) for w in OPPOSITES for v in case_forms((w,))}


def may_flip(claim_tokens: list[str], chunk_tokens: list[str]) -> bool:
    """Whether the claim has a comparison word and the chunk (raw tokens) one of its
    opposites: set operations rule most pairs out."""
    return any(
        not _OPPOSITE_TRIGGERS[w].isdisjoint(chunk_tokens) for w in _TRIGGERS.intersection(claim_tokens)
    )


def _anchored(tokens: list[str]) -> set[tuple[str, str]]:
    """(comparison word, anchor) pairs of lower-cased ``tokens``."""
    out = set()
    for i, t in enumerate(tokens):
        if t not in OPPOSITES:
            continue
        j = skip_past(tokens, i + 1, _SKIP)
        if j < len(tokens) and _is_anchor(tokens[j]):
            out.add((t, tokens[j]))
            continue
        before = [w for w in tokens[max(0, i - 2) : i] if _is_anchor(w)]
        if before:  # "prices were higher in 2022": the compared word comes first
            out.add((t, before[-1]))
    return out


def _is_anchor(token: str) -> bool:
    return token[:1].isdigit() or (token not in STOPWORDS and token not in OPPOSITES)


def comparison_flip(cp: TextProfile, sp: TextProfile) -> bool:
    """Sentence ``sp`` compares against one of the claim's anchors the opposite way, and never
    the claim's way."""
    claim = _anchored([t.lower() for t in cp.tokens])
    if not claim:
        return False
    sentence = _anchored([t.lower() for t in sp.tokens])
    return any(
        (word, anchor) not in sentence and any((o, anchor) in sentence for o in OPPOSITES[word])
        for word, anchor in claim
    )
