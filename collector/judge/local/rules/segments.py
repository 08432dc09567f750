"""A part of a claim that no chunk says anything about.

"When symptoms do show up, they can include tiredness, bone pain, muscle weakness, hair loss
and low mood" against a chunk that lists every symptom but hair loss: one chunk's pair model
calls the claim supported (nearly all of its words are there), yet "hair loss" is in no chunk
at all. A claim is cut into segments at commas, semicolons, colons, brackets and the words
that join list items and clauses (:data:`_SEGMENT_BREAKS`); a segment with at least two content
stems of the claim of which no chunk has any, in a claim otherwise covered (70% of its other
stems are in some chunk), means no single chunk can vouch for the whole claim. The judge then
leaves the verdict to the calibrated probability (:attr:`.claim_features.ClaimEvidence.
one_chunk_supports`). On the dev data the claims with such a segment are supported about half
as often as the rest of their set (126 claims).
"""

from __future__ import annotations

import re

from ...text.tokens import profile

__all__ = ["unmatched_segment"]

_SEGMENT_BREAKS = re.compile(
    r"[,;:()]|\b(?:and|or|which|who|whose|using|including|while|whereas|with)\b", re.I
)
# A segment needs this many of the claim's content stems (match keys) to count.
_MIN_KEYS = 2
# The rest of the claim must be this well covered by the chunks: otherwise nothing vouches for
# it anyway.
_REST_COVERED = 0.7


def unmatched_segment(text: str, claim_keys: frozenset[str], chunk_keys: frozenset[str]) -> bool:
    """Whether ``text`` (a claim, its match keys ``claim_keys``) has a segment of which no key is
    in ``chunk_keys`` (every chunk's), while the chunks cover the rest of the claim."""
    if len(claim_keys - chunk_keys) < _MIN_KEYS:
        return False  # most claims: no two of their words are missing from every chunk
    segments = [s for s in _SEGMENT_BREAKS.split(text) if s and not s.isspace()]
    if len(segments) < 2:
        return False
    for segment in segments:
        keys = {k for k in profile(segment).keys if k in claim_keys and not k[:1].isdigit()}
        if len(keys) < _MIN_KEYS or not keys.isdisjoint(chunk_keys):
            continue
        rest = claim_keys - keys
        if rest and len(rest & chunk_keys) >= _REST_COVERED * len(rest):
            return True
    return False
