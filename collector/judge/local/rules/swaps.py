"""Numbers or names swapped: "opens at 5 and closes at 9" against "opens at 9 and closes at
5", "France defeated Germany" against "Germany defeated France".

Every number of such a claim is in its sentence, and so is every word, so neither the number
features nor coverage see anything wrong; what differs is which word each number goes with.
This rule reads each number with the content stem right before it and the one right after it
(:attr:`.tokens.TextProfile.stems`, where a number's stem is its value; a month name is no
such word, since dates put the day on either side) and finds two claim pairs whose numbers
the sentence exchanges; a claim that only orders its facts differently ("30 offices and
5,000 staff") exchanges none. Names are read the same way around a past-tense verb both
texts share (:func:`roles_swapped`). The caller applies both to the chunk sentence the
claim rests on.
"""

from __future__ import annotations

from ...text.dates import MONTH_NAMES
from ...text.tokens import STOPWORDS, TextProfile, stem

__all__ = ["numbers_swapped", "roles_swapped"]

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


# Verbs that report a statement: "profits rose, the CEO said" says what "the CEO said profits
# rose" says, with the names on the other side.
_REPORTING = frozenset(
    stem(w) for w in "said stated reported announced told added noted claimed wrote according".split()
)
# How far from the verb a name counts as its subject or object, in tokens.
_ROLE_WINDOW = 3


def _content(tokens: list[str]) -> dict[str, tuple[int, str]]:
    """Each content stem that occurs once in ``tokens``: its position and its raw token."""
    seen: dict[str, list[tuple[int, str]]] = {}
    for i, t in enumerate(tokens):
        low = t.lower()
        if low in STOPWORDS or not t[:1].isalpha():
            continue
        seen.setdefault(stem(low), []).append((i, t))
    return {s: found[0] for s, found in seen.items() if len(found) == 1}


def _passive(tokens: list[str], i: int) -> bool:
    """Whether the verb at ``i`` names its agent with "by" ("was acquired by Google"). A
    passive without an agent ("was married to", "was named captain") keeps the roles where an
    active sentence has them."""
    return i + 1 < len(tokens) and tokens[i + 1].lower() == "by"


def roles_swapped(cp: TextProfile, sp: TextProfile) -> bool:
    """Two names of sentence ``sp`` exchange their roles around a past-tense verb both share
    ("France defeated Germany" against "Germany defeated France", "signed in London and
    ratified in Paris" against "signed in Paris and ratified in London"), both within
    three tokens of it (month names are no names: a date moves freely): one moves from
    before it to after it and the other the other way, in the same voice; or, with one side
    passive ("was acquired by"), both keep their places."""
    claim, sentence = _content(cp.tokens), _content(sp.tokens)
    names = [
        s
        for s, (_, t) in claim.items()
        if t[:1].isupper() and s not in _MONTH_STEMS and s in sentence and sentence[s][1][:1].isupper()
    ]
    if len(names) < 2:
        return False
    for pivot, (ci, word) in claim.items():
        if not word.endswith("ed") or word[:1].isupper() or pivot in _REPORTING or pivot not in sentence:
            continue
        si = sentence[pivot][0]
        near = [
            n
            for n in names
            if abs(claim[n][0] - ci) <= _ROLE_WINDOW and abs(sentence[n][0] - si) <= _ROLE_WINDOW
        ]
        sides = [(claim[n][0] < ci, sentence[n][0] < si) for n in near]
        if _passive(cp.tokens, ci) == _passive(sp.tokens, si):
            if (True, False) in sides and (False, True) in sides:
                return True
        elif (True, True) in sides and (False, False) in sides:
            return True
    return False
