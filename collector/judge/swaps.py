"""Numbers swapped: "opens at 5 and closes at 9" against "opens at 9 and closes at 5".

Every number of such a claim is in its sentence, and so is every word, so neither the number
features nor coverage see anything wrong; what differs is which word each number goes with.
This rule reads each number with the content stem right before it and the one right after it
(:attr:`.text.TextProfile.stems`, where a number's stem is its value; a month name is no
such word, since dates put the day on either side) and finds two claim pairs whose numbers
the sentence exchanges; a claim that only orders its facts differently ("30 offices and
5,000 staff") exchanges none. The caller applies it to the chunk sentence the claim rests on.
"""

from __future__ import annotations

from .dates import MONTH_NAMES
from .text import TextProfile, stem

__all__ = ["numbers_swapped"]

# Month names pair with a day on either side as a date is written ("June 5, 1954", "5 June
# 1954"): the order is formatting, not a swap.
_MONTH_STEMS = frozenset(stem(m.lower()) for m in MONTH_NAMES)


def _pairs(stems: list[str], numbers: frozenset[str], offset: int) -> set[tuple[str, str]]:
    """(word, number) pairs: each of ``numbers`` with the content stem ``offset`` (-1 or +1)
    positions away in ``stems``, when that stem is no number."""
    out = set()
    for i, s in enumerate(stems):
        j = i + offset
        if (
            s in numbers
            and 0 <= j < len(stems)
            and not stems[j][:1].isdigit()
            and stems[j] not in _MONTH_STEMS
        ):
            out.add((stems[j], s))
    return out


def numbers_swapped(cp: TextProfile, sp: TextProfile) -> bool:
    """The claim has two or more numbers, all of them in sentence ``sp``, and two of its
    (word, number) pairs on one side exchange their numbers in the sentence: the claim's
    (w1, n) and (w2, m) are the sentence's (w1, m) and (w2, n)."""
    numbers = cp.numbers
    if len(numbers) < 2 or not numbers <= sp.numbers:
        return False
    for offset in (-1, 1):
        sentence = _pairs(sp.stems, numbers, offset)
        moved = sorted(_pairs(cp.stems, numbers, offset) - sentence)
        for i, (w1, n) in enumerate(moved):
            for w2, m in moved[i + 1 :]:
                if w1 != w2 and n != m and (w1, m) in sentence and (w2, n) in sentence:
                    return True
    return False
