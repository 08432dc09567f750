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

from .text import TextProfile, profile, profile_sentences

__all__ = ["ChunkEvidence", "build_evidence", "is_usable", "NON_CURRENT_STATUSES"]

NON_CURRENT_STATUSES: frozenset[str] = frozenset(
    "superseded deprecated archived expired obsolete retracted withdrawn draft outdated replaced historical "
    "repealed revoked stale invalid".split()
)

_SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+")


@dataclass(slots=True)
class ChunkEvidence:
    """One retrieved chunk, tokenised once: the whole-chunk profile, each
    sentence's stem set and match keys (first four characters of the stems).

    ``windows`` (two consecutive sentences) and full per-sentence profiles
    (``sentences``: numbers, negation) are built on first use, since most
    chunks never need them.
    """

    id: str
    content: str
    usable: bool
    reason: str | None
    whole: TextProfile
    sentence_texts: list[str]
    sentence_stems: list[frozenset[str]]
    sentence_keys: list[frozenset[str]]
    _windows: list[tuple[frozenset[str], frozenset[str]]] | None = None
    _sentences: list[TextProfile] | None = None

    @property
    def keys(self) -> frozenset[str]:
        return self.whole.keys

    @property
    def windows(self) -> list[tuple[frozenset[str], frozenset[str]]]:
        """(stems, keys) of each sentence joined with the next one."""
        if self._windows is None:
            st, ks = self.sentence_stems, self.sentence_keys
            self._windows = [
                (st[i] | st[i + 1], ks[i] | ks[i + 1]) if i + 1 < len(st) else (st[i], ks[i])
                for i in range(len(st))
            ]
        return self._windows

    @property
    def sentences(self) -> list[TextProfile]:
        """Full profiles of the sentences (numbers, negation, entities)."""
        if self._sentences is None:
            self._sentences = [profile(t) for t in self.sentence_texts]
        return self._sentences


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


def build_evidence(chunks: list[dict[str, Any]]) -> list[ChunkEvidence]:
    """Tokenise every chunk once."""
    out: list[ChunkEvidence] = []
    for ch in chunks:
        content = ch["content"]
        usable, reason = is_usable(ch.get("metadata"))
        texts = [s for s in _SENT_RE.split(content) if s and s.strip()] or [content]
        stem_sets, key_sets, whole = profile_sentences(texts)
        out.append(
            ChunkEvidence(
                id=ch["id"],
                content=content,
                usable=usable,
                reason=reason,
                whole=whole,
                sentence_texts=texts,
                sentence_stems=stem_sets,
                sentence_keys=key_sets,
            )
        )
    return out
