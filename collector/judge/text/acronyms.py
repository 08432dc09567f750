"""Acronyms: a claim's acronym read as the name the evidence spells out.

An answer shortens the names its sources spell out: "the ACA" for "the Affordable Care Act",
"NASA" for "National Aeronautics and Space Administration". Lexically the acronym is a word
the chunks lack, and an entity they do not mention, so a faithful claim reads as unsupported.
:func:`expand_acronyms` replaces each acronym the chunks do not use by the run of capitalised
words whose initials spell it (function words inside the run skipped: "Centers for Disease
Control" is CDC; a capitalised function word, "The" opening a sentence, is no part of a
name), when a chunk has one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .tokens import STOPWORDS

if TYPE_CHECKING:
    from ..local.evidence import ChunkEvidence

__all__ = ["expand_acronyms", "is_acronym"]

# Lower-case words a name's run may hold without an initial: "Department of Health and Human Services".
_INSIDE = frozenset("of and for the on in to de du la von van der".split())
_LONGEST = 6
_ROMAN_RE = re.compile(r"^M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})$")


def is_acronym(token: str) -> bool:
    """Three to six capital letters that are no Roman numeral: "ACA", "NASA" (not "II",
    not "XIV"; two letters, "TV", "ER", meet the initials of too many names by chance)."""
    return 3 <= len(token) <= 6 and token.isalpha() and token.isupper() and not _ROMAN_RE.match(token)


def _runs(tokens: list[str]) -> list[list[str]]:
    """The runs of capitalised words in ``tokens``, with the function words inside them."""
    runs: list[list[str]] = []
    run: list[str] = []
    for tok in [*tokens, "."]:
        if tok[:1].isupper() and tok.isalpha() and not tok.isupper() and tok.lower() not in STOPWORDS:
            run.append(tok)
        elif run and tok in _INSIDE:
            run.append(tok)
        else:
            while run and run[-1] in _INSIDE:
                run.pop()
            if len(run) >= 2:
                runs.append(run)
            run = []
    return runs


def _names(tokens: list[str], wanted: set[str]) -> dict[str, list[str]]:
    """The names in ``tokens`` that spell an acronym of ``wanted``: spans of a run of
    capitalised words (a run can join names: "the Affordable Care Act in March"), from a
    capitalised word to a capitalised word, by the initials of their capitalised words."""
    out: dict[str, list[str]] = {}
    for run in _runs(tokens):
        starts = [k for k, w in enumerate(run) if w not in _INSIDE]
        for a_i, a in enumerate(starts):
            initials = ""
            for b in starts[a_i : a_i + _LONGEST]:
                initials += run[b][0]
                if len(initials) >= 2 and initials in wanted:
                    out.setdefault(initials, run[a : b + 1])
    return out


def expand_acronyms(tokens: list[str], chunks: Sequence[ChunkEvidence]) -> list[str] | None:
    """``tokens`` with each acronym the chunks do not use replaced by the name a chunk spells
    it with; None when nothing is replaced."""
    acronyms = [t for t in tokens if is_acronym(t)]
    if not acronyms:
        return None
    used = set().union(*(c.whole.tokens for c in chunks)) if chunks else set()
    unknown = {a for a in acronyms if a not in used}
    if not unknown:
        return None
    names: dict[str, list[str]] = {}
    for chunk in chunks:
        for initials, name in _names(chunk.whole.tokens, unknown).items():
            names.setdefault(initials, name)
    if not unknown & names.keys():
        return None
    out: list[str] = []
    for tok in tokens:
        out.extend(names[tok] if tok in unknown and tok in names else [tok])
    return out
