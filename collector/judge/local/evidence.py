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
from itertools import chain
from typing import Any

from ..text.dates import ends_with_month_abbreviation, may_hold_date_time
from ..text.numbers import may_group_digits, read_number_words
from ..text.tokens import (
    TextProfile,
    char_classes,
    plain_classes,
    profile,
    profile_sentences,
    spaced,
    tokenise,
)

__all__ = ["ChunkEvidence", "build_evidence", "is_usable", "split_sentences", "NON_CURRENT_STATUSES"]

NON_CURRENT_STATUSES: frozenset[str] = frozenset(
    "superseded deprecated archived expired obsolete retracted withdrawn draft outdated replaced historical "
    "repealed revoked stale invalid".split()
)

# A sentence ends at [.!?] followed by whitespace and an uppercase letter, digit, quote or
# bracket, or at a line break. (Matching the punctuation itself, instead of a look-behind,
# lets the regex engine skip ahead; the punctuation stays with its sentence.)
_SENT_END_RE = re.compile(r"[.!?]\s+(?=[A-Z0-9\"'(\[])|\n+")


_SENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\"'([")


def split_sentences(content: str) -> list[str]:
    """The sentences of a chunk (empty pieces dropped; the whole content if none remain)."""
    if _splits_plainly(content):
        return [content[a:b] for a, b in _plain_spans(content)]
    return _split_regex(content)


def _split_regex(content: str) -> list[str]:
    """:func:`split_sentences` by the boundary regex (any text)."""
    out: list[str] = []
    pos = 0
    for m in _SENT_END_RE.finditer(content):
        if content[m.end() : m.end() + 1].isdigit() and ends_with_month_abbreviation(
            content[pos : m.start() + 1]
        ):
            continue  # "Jan. 15"
        end = m.start()
        if content[end] != "\n":
            end += 1  # keep the punctuation
        piece = content[pos:end]
        if piece and not piece.isspace():
            out.append(piece)
        pos = m.end()
    piece = content[pos:]
    if piece and not piece.isspace():
        out.append(piece)
    return out or [content]


def _splits_plainly(content: str) -> bool:
    """Printable ASCII without ``!``/``?``: the usual chunk, which :func:`_plain_spans` splits."""
    return content.isascii() and content.isprintable() and "!" not in content and "?" not in content


def _plain_spans(content: str) -> list[tuple[int, int]]:
    """:func:`split_sentences` as (start, end) offsets, for content that :func:`_splits_plainly`.

    Its only whitespace is the space and its only sentence end is ``.``, so every
    boundary of the regex (``[.!?]\\s+`` before a capital, digit, quote or bracket) is a
    ``". "`` that C-level ``str.split`` finds; a split whose next piece, less leading
    spaces, does not open a sentence is no boundary. Same pieces as the regex, a
    fraction of the cost.
    """
    parts = content.split(". ")
    if len(parts) == 1:
        return [(0, len(content))]  # no boundary: the regex path gives [content] too
    spans: list[tuple[int, int]] = []
    starts = _SENT_START
    start = 0
    pos = len(parts[0])  # where the ". " after the current part sits
    for i, p in enumerate(parts[1:]):
        if p.lstrip(" ")[:1].isdigit() and ends_with_month_abbreviation(parts[i] + "."):
            pass  # "Jan. 15": no boundary
        elif p[:1] in starts:
            spans.append((start, pos + 1))
            start = pos + 2
        elif p[:1] == " ":
            q = p.lstrip(" ")
            if q[:1] in starts:
                spans.append((start, pos + 1))
                start = pos + 2 + len(p) - len(q)
        pos += 2 + len(p)
    spans.append((start, len(content)))
    return spans


def _sentences_and_tokens(content: str) -> tuple[list[str], list[list[str]]]:
    """A chunk's sentences and each one's tokens (:func:`.tokens.tokenise`). A plain chunk
    (:func:`.tokens.is_plain`) with no date or time to read (:func:`.dates.may_hold_date_time`)
    is translated once and each sentence's slice split."""
    c = char_classes(content)
    if c is not None and 33 not in c:  # printable ASCII without "!"/"?": _splits_plainly
        spans = _plain_spans(content)
        texts = [content[a:b] for a, b in spans]
        if plain_classes(c) and not may_group_digits(c):
            sp = spaced(content)
            tokens = [sp[a:b].split() for a, b in spans]
            if not may_hold_date_time(content, chain.from_iterable(tokens)):
                return texts, list(map(read_number_words, tokens))
    else:
        texts = _split_regex(content)
    return texts, list(map(tokenise, texts))


@dataclass(slots=True)
class ChunkEvidence:
    """One retrieved chunk, tokenised once: the whole-chunk profile, each
    sentence's stem set and match keys (first four characters of the stems).

    ``window_keys`` (two consecutive sentences) and full per-sentence profiles
    (:meth:`sentence_profile`: numbers, negation) are built on first use, since
    many chunks never need them.
    """

    id: str
    content: str
    usable: bool
    reason: str | None
    whole: TextProfile
    sentence_texts: list[str]
    sentence_stem_lists: list[list[str]]  # each sentence's content stems, in order
    sentence_keys: list[frozenset[str]]
    _sentence_stems: list[frozenset[str]] | None = None
    _window_keys: list[frozenset[str]] | None = None
    _sentences: dict[int, TextProfile] | None = None

    @property
    def keys(self) -> frozenset[str]:
        return self.whole.keys

    @property
    def sentence_stems(self) -> list[frozenset[str]]:
        """Each sentence's content stems (built on first use)."""
        if self._sentence_stems is None:
            self._sentence_stems = list(map(frozenset, self.sentence_stem_lists))
        return self._sentence_stems

    @property
    def window_keys(self) -> list[frozenset[str]]:
        """Match keys of each sentence joined with the next one (the last sentence alone)."""
        if self._window_keys is None:
            ks = self.sentence_keys
            self._window_keys = [ks[i] | ks[i + 1] for i in range(len(ks) - 1)] + ks[-1:]
        return self._window_keys

    def sentence_profile(self, i: int) -> TextProfile:
        """The full profile (numbers, negation, entities) of sentence ``i``, built on first use."""
        if self._sentences is None:
            self._sentences = {}
        sp = self._sentences.get(i)
        if sp is None:
            sp = self._sentences[i] = profile(self.sentence_texts[i])
        return sp

    @property
    def sentences(self) -> list[TextProfile]:
        """Full profiles of all the sentences."""
        return [self.sentence_profile(i) for i in range(len(self.sentence_texts))]


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
        texts, tokens = _sentences_and_tokens(content)
        stem_lists, key_sets, whole = profile_sentences(tokens)
        out.append(
            ChunkEvidence(
                id=ch["id"],
                content=content,
                usable=usable,
                reason=reason,
                whole=whole,
                sentence_texts=texts,
                sentence_stem_lists=stem_lists,
                sentence_keys=key_sets,
            )
        )
    return out
