"""Query text normalisation and shingles: what "the same question" means to ragpulse.

Shared by the re-ask detector (collector/feedback/reask.py) and the export's
near-duplicate merge (collector/export/dedup.py), so both agree.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalize_query", "shingles", "jaccard"]

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)
# ASCII text on bytes, with the same result (4x cheaper; the ingest loop's re-ask detection
# normalises every query): its word characters are [A-Za-z0-9_], every other byte separates.
_ASCII_WORDS = bytes(b if chr(b).isascii() and (chr(b).isalnum() or b == 0x5F) else 0x20 for b in range(256))


def normalize_query(text: str) -> str:
    """Lower case, accents folded, punctuation dropped, whitespace collapsed."""
    if not text:
        return ""
    if text.isascii():  # NFKD leaves ASCII as it is
        return b" ".join(text.lower().encode().translate(_ASCII_WORDS).split()).decode()
    folded = unicodedata.normalize("NFKD", text)
    if not folded.isascii():  # no ASCII character is a combining mark
        folded = "".join(c for c in folded if not unicodedata.combining(c))
    folded = folded.lower()
    return " ".join(_NON_WORD.sub(" ", folded).split())


def shingles(normalized: str, size: int = 3) -> set[str]:
    """Character ``size``-grams of the normalised text (word order and typos change few of them)."""
    text = f" {normalized} "
    if len(text) <= size:
        return {text}
    return {text[i : i + size] for i in range(len(text) - size + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b| (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)
