"""Approximate numbers: a claim's rounded or qualified number read as the evidence value it
stands for.

LLM answers round the numbers of their sources ("1.5 million" for 1,523,400, "49%" for
48.7%), qualify them ("about 300", "more than 300", "nearly 50 percent" for 312 and 48.7) and
name the period a year falls in ("the mid-1990s" for 1994, "the 19th century" for 1883).
Compared as exact values, each such number is missing from the evidence, and a number that
differs from the evidence sentence's contradicts it: a faithful answer would be judged
contradicted, the costliest verdict. :func:`claim_profile` profiles a claim with each of its
numbers that the chunks do not hold exactly replaced by the number it stands for (the
closest), qualifier or period words dropped, so every later comparison sees that value. The
candidates are the numbers of the chunk sentences on the claim's subject (sharing 40% of its
terms): a long chunk has many numbers to meet by chance. The claim's stored text is
unchanged.

What counts as approximating ``x``, for a claim number ``c`` whose last significant digit
has the place value ``unit`` (300: 100; 310: 10; 48.7: 0.1; "1.5 million": 100,000):

- "about", "around", "approximately", "roughly", "some", "close to", ...: ``|x - c| <= unit/2``
  (``x`` rounds to ``c``) and within a tenth of ``c``;
- "over", "more than", "at least", "upwards of", ...: ``c <= x <= c + unit``, within a quarter;
- "less than", "nearly", "almost", "up to", ...: ``c - unit <= x <= c``, within a quarter
  ("under" is not one: "the under-18 level" names an age group);
- no qualifier: ``x`` rounds to ``c`` within a tenth, and ``c`` is written with at least two
  significant digits but fewer than ``x`` has, and is not a year ("1.5 million" and "49%"
  round 1,523,400 and 48.7; "300" does not round 312, nor "2010" 2013).

A fraction of a whole ("half", "a third", "two-thirds", "three quarters") names the
percentage within 5 points of it (from it to 10 above after "more than", from 10 below to it
after "nearly"): "about a third of applicants" for 35 percent.

A decade ("the 1990s") holds its ten years, a century ("the 1800s", "the 19th century") its
hundred; "early", "mid" and "late" narrow them to the first 40%, the middle 40% and the last
40% ("the early 1990s": 1990-1993).

A quantity in another unit of its dimension (:mod:`.units`) is converted, and read as
"about" when bare ("six weeks" for 42 days); the same number in another unit ("100 miles"
for "100 km", from 10 up) reads as the claim's quantity in the evidence's unit, a different
number. :func:`claim_profile` is where a claim is read against its evidence: it expands the
claim's acronyms (:mod:`.acronyms`) before reading its numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from ...text.acronyms import expand_acronyms
from ...text.numbers import scale_of
from ...text.tokens import TextProfile, normalise_numbers, profile_tokens, tokenise
from ...text.units import UNITS, quantity_at

if TYPE_CHECKING:
    from ..evidence import ChunkEvidence

__all__ = ["QUALIFIERS", "claim_profile"]

# Words before a number that make it approximate, and in which direction (lower case).
QUALIFIERS: dict[tuple[str, ...], str] = {
    **{(w,): "about" for w in "about around approximately approx roughly some circa estimated".split()},
    ("close", "to"): "about",
    ("an", "estimated"): "about",
    **{(w,): "over" for w in "over above exceeding".split()},
    **{(a, "than"): "over" for a in ("more", "greater")},
    ("at", "least"): "over",
    ("upwards", "of"): "over",
    ("in", "excess", "of"): "over",
    # Not "under": "under-18 level", "under 23s" name age groups.
    **{(w,): "under" for w in "below nearly almost".split()},
    **{(a, "than"): "under" for a in ("less", "fewer")},
    ("at", "most"): "under",
    ("up", "to"): "under",
}
_LONGEST = max(map(len, QUALIFIERS))
_YEARS = (1000, 2100)
# However few digits the claim writes, it stands for a value near it: "about 100" is not 60
# (a tenth of it at most), nor "over 200" 290 (a quarter, for a bound: "more than 30" is 35).
_RELATIVE: dict[str | None, Decimal] = {None: Decimal("0.1"), "about": Decimal("0.1")}
_RELATIVE |= dict.fromkeys(("over", "under"), Decimal("0.25"))
_PARTS = {"early": (0.0, 0.4), "mid": (0.3, 0.7), "middle": (0.3, 0.7), "late": (0.6, 1.0)}
# Fractions of a whole, read as percentages: "half" (50), "a third" (33.3), "two-thirds"
# (66.7), "three quarters" (75); "third" alone is the ordinal.
_FRACTIONS = {"half": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fifth": 5, "fifths": 5}
_UNIT_FORMS = frozenset(f(w) for w in UNITS for f in (str.lower, str.capitalize))
_FRACTION_FORMS = frozenset(f(w) for w in _FRACTIONS for f in (str.lower, str.capitalize))
_MULTIPLIERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4}
# The percentages a fraction stands for, around its value, after each qualifier.
_FRACTION_WINDOW: dict[str | None, tuple[int, int]] = {None: (-5, 5), "about": (-5, 5), "over": (0, 10)}
_FRACTION_WINDOW["under"] = (-10, 0)


@dataclass(frozen=True, slots=True)
class _Written:
    """A number as the claim writes it."""

    value: Decimal
    unit: Decimal  # the place value of its last significant digit
    significant: int  # its significant digits
    span: int  # tokens: 2 with a scale word ("1.5 million")
    year: bool  # four digits from 1000 to 2100, no scale word


def _canonical(d: Decimal) -> str:
    """The number set's form of a value (:func:`.tokens.normalise_numbers`): 1500000, 48.7."""
    return format(d.normalize(), "f")


def _written(tokens: list[str], i: int) -> _Written | None:
    """The cardinal written at ``tokens[i]``, with a scale word after it if any; None when
    ``tokens[i]`` is no cardinal."""
    tok = tokens[i]
    canonical = normalise_numbers([tok.lower()])
    if len(canonical) != 1:
        return None
    try:
        value = Decimal(tok.rstrip("%").replace(",", "") if tok[:1].isdigit() else next(iter(canonical)))
    except InvalidOperation:
        return None
    figures, exponent = value.as_tuple()[1:]
    if not isinstance(exponent, int):
        return None
    trailing = len(figures) - len("".join(map(str, figures)).rstrip("0")) if exponent >= 0 else 0
    unit = Decimal(10) ** (exponent + trailing)
    significant = max(len(figures) - trailing, 1)
    scale = scale_of(tokens[i + 1], tok) if i + 1 < len(tokens) else None
    if scale is not None:
        factor = Decimal(int(scale))
        return _Written(value * factor, unit * factor, significant, 2, False)
    year = tok.isdigit() and len(tok) == 4 and _YEARS[0] <= int(tok) <= _YEARS[1]
    return _Written(value, unit, significant, 1, year)


def _qualifier(tokens: list[str], i: int) -> tuple[str | None, int]:
    """The qualifier ending just before ``tokens[i]`` and how many tokens it spans."""
    for n in range(_LONGEST, 0, -1):
        if i >= n:
            kind = QUALIFIERS.get(tuple(t.lower() for t in tokens[i - n : i]))
            if kind is not None:
                return kind, n
    return None, 0


def _approximates(c: _Written, kind: str | None, x: Decimal) -> bool:
    """Whether the claim number ``c``, after the qualifier ``kind``, approximates the evidence
    value ``x`` (the rules in the module docstring)."""
    if abs(x - c.value) > _RELATIVE[kind] * abs(c.value):
        return False
    if kind == "about":
        return abs(x - c.value) * 2 <= c.unit
    if kind == "over":
        return c.value <= x <= c.value + c.unit
    if kind == "under":
        return c.value - c.unit <= x <= c.value
    x_significant = len(x.normalize().as_tuple().digits)
    return not c.year and 2 <= c.significant < x_significant and abs(x - c.value) * 2 <= c.unit


def _period(tokens: list[str], i: int) -> tuple[int, int, int, int] | None:
    """A decade or century written at ``tokens[i]`` ("1990s", "the 19th century", with
    "early", "mid" or "late" before it): its first and last year, the tokens its modifier
    spans before ``i`` and the tokens it spans from ``i``. None when there is none."""
    tok = tokens[i]
    if not tok.isdigit():
        return None
    after = [t.lower() for t in tokens[i + 1 : i + 3]]
    if len(tok) == 4 and tok.endswith("0") and after[:1] == ["s"]:
        first, width, span = int(tok), 100 if tok.endswith("00") else 10, 2
    elif 1 <= int(tok) <= 21 and after[:1] in (["st"], ["nd"], ["rd"], ["th"]) and after[1:] == ["century"]:
        first, width, span = (int(tok) - 1) * 100, 100, 3
    else:
        return None
    part = _PARTS.get(tokens[i - 1].lower()) if i else None
    if part is None:
        return first, first + width - 1, 0, span
    return first + math.floor(part[0] * width), first + math.ceil(part[1] * width) - 1, 1, span


@dataclass(frozen=True, slots=True)
class _Quantity:
    """A number with a unit in a chunk sentence."""

    value: Decimal  # as written
    size: Decimal  # the unit's size in the dimension's base unit
    dimension: str
    unit: str
    tokens: list[str]  # the number and the unit word, as written

    @property
    def base(self) -> Decimal:
        """The value in the dimension's base unit."""
        return self.value * self.size


@dataclass(slots=True)
class _Context:
    """What the claim's numbers can stand for: the numbers of the chunk sentences on its
    subject (values and their canonical forms) and those of them written with a unit."""

    values: list[tuple[Decimal, str]]
    quantities: list[_Quantity]
    chunks: Sequence[ChunkEvidence]
    _everywhere: set[tuple[Decimal, str]] | None = None

    @property
    def everywhere(self) -> set[tuple[Decimal, str]]:
        """(value, unit name) of every quantity in the chunks, built on first use."""
        if self._everywhere is None:
            self._everywhere = {(q.value, q.unit) for c in self.chunks for q in _quantities(c.whole.tokens)}
        return self._everywhere


def _context(claim: TextProfile, chunks: Sequence[ChunkEvidence], all_numbers: frozenset[str]) -> _Context:
    """The :class:`_Context` of the chunk sentences on the claim's subject: those sharing at
    least 40% of the claim's terms, its content stems less numbers and the numbers the
    chunks hold exactly ("45 passes for about 690 yards" and "45 receptions ... 694
    receiving yards")."""
    words = frozenset(w for w in claim.stem_set if not w[:1].isdigit()) | (claim.numbers & all_numbers)
    need = max(1, math.ceil(0.4 * len(words)))
    found: set[str] = set()
    quantities = []
    for chunk in chunks:
        for i, stems in enumerate(chunk.sentence_stems):
            if len(words & stems) < need:
                continue
            sp = chunk.sentence_profile(i)
            found |= sp.numbers
            quantities += _quantities(sp.tokens)
    values = []
    for e in found:
        try:
            values.append((Decimal(e), e))
        except InvalidOperation:
            continue
    return _Context(values, quantities, chunks)


def _quantities(tokens: list[str]) -> list[_Quantity]:
    """The numbers of ``tokens`` written with a unit right after them."""
    out = []
    for k in range(len(tokens) - 1):
        unit = UNITS.get(tokens[k + 1].lower())
        written = _written(tokens, k) if unit is not None else None
        if written is not None and written.span == 1:
            out.append(_Quantity(written.value, unit[2], unit[0], unit[1], tokens[k : k + 2]))
    return out


def _fraction(tokens: list[str], i: int) -> tuple[Decimal, int] | None:
    """A fraction of a whole written at ``tokens[i]`` ("half", "a third", "two-thirds",
    "three quarters") as a percentage, and the tokens its multiplier spans before ``i``."""
    denominator = _FRACTIONS.get(tokens[i].lower())
    if denominator is None:
        return None
    before = tokens[i - 1].lower() if i else ""
    if before in _MULTIPLIERS:
        return Decimal(100 * _MULTIPLIERS[before]) / denominator, 1
    return (Decimal(50), 0) if denominator == 2 else None


def _ratio(tokens: list[str], i: int) -> tuple[Decimal, int, tuple[str, str]] | None:
    """A share written at ``tokens[i]`` as "3 in 10" or "one out of five" as a percentage, the
    tokens it spans and its two numbers' canonical forms; None for anything else (the second
    number must be the larger: "2 in 1" is no share)."""
    first = _written(tokens, i)
    if first is None and tokens[i].lower() == "one":  # "one" alone is no number (text.py)
        first = _written(["1"], 0)
    if first is None or first.span != 1:
        return None
    j = i + 1
    if [t.lower() for t in tokens[j : j + 1]] == ["in"]:
        j += 1
    elif [t.lower() for t in tokens[j : j + 2]] == ["out", "of"]:
        j += 2
    else:
        return None
    whole = _written(tokens, j) if j < len(tokens) else None
    if whole is None or whole.span != 1 or whole.year or not 0 < first.value < whole.value:
        return None
    return first.value * 100 / whole.value, j + 1 - i, (_canonical(first.value), _canonical(whole.value))


def _percentage_near(share: Decimal, kind: str | None, values: list[tuple[Decimal, str]]) -> str | None:
    """The evidence value closest to the percentage ``share`` within its window after the
    qualifier ``kind`` (:data:`_FRACTION_WINDOW`), as the evidence writes it; None if none."""
    low, high = _FRACTION_WINDOW[kind]
    near = [(abs(x - share), e) for x, e in values if share + low <= x <= share + high]
    return min(near)[1] if near else None


def _reading(
    tokens: list[str], i: int, missing: frozenset[str], context: _Context
) -> tuple[int, int, list[str]] | None:
    """How the number written at ``tokens[i]`` reads against the evidence ``context``: the
    tokens to drop before ``i`` (qualifier, period or fraction words), the tokens it spans
    from ``i`` and the evidence tokens that replace them; None to keep it as written."""
    values = context.values
    period = _period(tokens, i)
    if period is not None and (tokens[i] in missing or tokens[i] + tokens[i + 1].lower() in missing):
        first, last, before, span = period
        mid = Decimal(first + last) / 2
        years = [(abs(x - mid), e) for x, e in values if first <= x <= last and x == x.to_integral_value()]
        return (before, span, [min(years)[1]]) if years else None
    fraction = _fraction(tokens, i)
    if fraction is not None:
        share, multiplier = fraction
        kind, qualifier_span = _qualifier(tokens, i - multiplier)
        percent = _percentage_near(share, kind, values)
        return (multiplier + qualifier_span, 1, [percent]) if percent else None
    ratio = _ratio(tokens, i)
    if ratio is not None and not missing.isdisjoint(ratio[2]):
        share, span, _ = ratio
        kind, qualifier_span = _qualifier(tokens, i)
        percent = _percentage_near(share, kind, values)
        if percent:
            return qualifier_span, span, [percent]
    written = _written(tokens, i)
    if written is None:
        return None
    unit = quantity_at(tokens, i + written.span - 1)
    if _canonical(written.value) not in missing:
        return _other_unit(written, unit, context) if unit is not None else None
    kind, qualifier_span = _qualifier(tokens, i)
    near = [(abs(x - written.value), e) for x, e in values if _approximates(written, kind, x)]
    if near:
        return qualifier_span, written.span, [min(near)[1]]
    if unit is None:
        return None
    # Another unit of the same dimension: a conversion rounds, so a bare number reads as "about".
    converted = [
        (abs(q.base / unit[2] - written.value), q.tokens)
        for q in context.quantities
        if q.dimension == unit[0]
        and q.unit != unit[1]
        and _approximates(written, kind or "about", q.base / unit[2])
    ]
    return (qualifier_span, written.span + 1, min(converted)[1]) if converted else None


def _other_unit(
    written: _Written, unit: tuple[str, str, Decimal], context: _Context
) -> tuple[int, int, list[str]] | None:
    """The claim's number and unit in the evidence's unit when a sentence on its subject
    gives the same number in another unit of the dimension and no chunk gives it in the
    claim's ("100 miles" against "100 km" reads as 160.9344 km): a different quantity, not a
    match. Only for numbers of 10 and more: "two years" and "two days" meet by chance."""
    dimension, name, size = unit
    if written.value < 10:
        return None
    same = [q for q in context.quantities if q.dimension == dimension and q.value == written.value]
    if not same or any(q.unit == name for q in same) or (written.value, name) in context.everywhere:
        return None
    q = same[0]
    return 0, written.span + 1, [_canonical(written.value * size / q.size), q.tokens[1]]


def _has_quantity(tokens: list[str]) -> bool:
    """Whether ``tokens`` hold a number of 10 or more with a unit right after it (what
    :func:`_other_unit` reads); a C-level set test first, since most claims have no unit."""
    if _UNIT_FORMS.isdisjoint(tokens):
        return False
    for k in range(len(tokens) - 1):
        if tokens[k + 1].lower() in UNITS:
            written = _written(tokens, k)
            if written is not None and written.value >= 10:
                return True
    return False


def claim_profile(
    text: str, chunks: Sequence[ChunkEvidence], all_numbers: frozenset[str] | None = None
) -> TextProfile:
    """The claim's profile (:func:`.tokens.profile`) read against the chunks: each acronym
    they do not use as the name they spell it with (:func:`.acronyms.expand_acronyms`), and
    each number they lack (their numbers: ``all_numbers``, computed when None) and each
    fraction as the number of a chunk sentence on the claim's subject that it approximates,
    whose year its decade or century holds or whose percentage it names (the closest), its
    qualifier dropped."""
    tokens = tokenise(text)
    tokens = expand_acronyms(tokens, chunks) or tokens
    base = profile_tokens(tokens)
    if all_numbers is None:
        all_numbers = frozenset().union(*(c.whole.numbers for c in chunks))
    missing = base.numbers - all_numbers
    if not missing and _FRACTION_FORMS.isdisjoint(tokens) and not _has_quantity(tokens):
        return base
    context = _context(base, chunks, all_numbers)
    if not context.values:
        return base
    out: list[str] = []
    i, changed = 0, False
    while i < len(tokens):
        reading = _reading(tokens, i, missing, context)
        if reading is None:
            out.append(tokens[i])
            i += 1
            continue
        drop, span, replacement = reading
        del out[len(out) - drop :]
        out.extend(replacement)
        changed = True
        i += span
    return profile_tokens(out) if changed else base
