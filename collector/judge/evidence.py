"""Precomputed views of the retrieved chunks of one trace.

Each chunk is tokenised once per trace: its content stems, stem bigrams,
numbers, entities and its sentences (as stem sets), so that comparing four
claims with ten chunks costs set operations, not re-tokenisation. Chunk
metadata decides whether a chunk is *usable* evidence (current and
authoritative); an answer resting on unusable chunks is a retrieval failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .text import TextProfile, profile

__all__ = ["ChunkEvidence", "build_evidence", "is_usable", "prefixes_of", "NON_CURRENT_STATUSES"]

NON_CURRENT_STATUSES: frozenset[str] = frozenset(
    "superseded deprecated archived expired obsolete retracted withdrawn draft outdated replaced historical "
    "repealed revoked stale invalid".split()
)

_SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+")


@dataclass(slots=True)
class ChunkEvidence:
    """One retrieved chunk, tokenised: whole-chunk profile plus one profile per sentence."""

    id: str
    content: str
    usable: bool
    reason: str | None
    whole: TextProfile
    sentences: list[TextProfile]
    sentence_texts: list[str]
    prefixes: frozenset[str]
    windows: list[tuple[frozenset[str], frozenset[str]]]


def is_usable(metadata: dict[str, Any] | None) -> tuple[bool, str | None]:
    """Whether a chunk is current, authoritative evidence; else the reason
    (``superseded``, ``non_authoritative`` ...). Missing metadata counts as usable."""
    if not metadata:
        return True, None
    status = metadata.get("status")
    if isinstance(status, str) and status.strip().lower() in NON_CURRENT_STATUSES:
        return False, status.strip().lower()
    auth = metadata.get("authoritative")
    if auth is False or (isinstance(auth, str) and auth.strip().lower() in ("false", "no", "0")):
        return False, "non_authoritative"
    return True, None


def prefixes_of(stems: frozenset[str]) -> frozenset[str]:
    """Four-character prefixes of the stems (for fuzzy matching of derivations)."""
    return frozenset(t[:4] for t in stems if len(t) >= 4)


def build_evidence(chunks: list[dict[str, Any]]) -> list[ChunkEvidence]:
    """Tokenise every chunk once."""
    out: list[ChunkEvidence] = []
    for ch in chunks:
        content = ch["content"]
        usable, reason = is_usable(ch.get("metadata"))
        texts = [s for s in _SENT_RE.split(content) if s and s.strip()] or [content]
        sents = [profile(s) for s in texts]
        windows = []
        for i, sp in enumerate(sents):
            stems = sp.stem_set | sents[i + 1].stem_set if i + 1 < len(sents) else sp.stem_set
            windows.append((stems, prefixes_of(stems)))
        whole = profile(content)
        out.append(
            ChunkEvidence(
                id=ch["id"],
                content=content,
                usable=usable,
                reason=reason,
                whole=whole,
                sentences=sents,
                sentence_texts=texts,
                prefixes=prefixes_of(whole.stem_set),
                windows=windows,
            )
        )
    return out
