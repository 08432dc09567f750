"""Approximate numbers: a claim's rounded or qualified number read as the evidence value it
stands for.

LLM answers round the numbers of their sources ("1.5 million" for 1,523,400, "49%" for
48.7%) and qualify them ("about 300", "more than 300", "nearly 50 percent" for 312 and
48.7). Compared as exact values, each such number is missing from the evidence, and a
number that differs from the evidence sentence's contradicts it: a faithful answer would be
judged contradicted, the costliest verdict. :func:`claim_profile` profiles a claim with each
of its numbers that the evidence does not hold exactly replaced by the evidence number it
approximates (the closest one), and the qualifier dropped, so every later comparison sees
the value the claim stands for. The claim's stored text is unchanged.

What counts as approximating ``x``, for a claim number ``c`` whose last significant digit
has the place value ``unit`` (300: 100; 310: 10; 48.7: 0.1; "1.5 million": 100,000):

- "about", "around", "approximately", "roughly", "some", "close to", ...: ``|x - c| <= unit/2``
  (``x`` rounds to ``c``);
- "over", "more than", "at least", "upwards of", ...: ``c <= x <= c + unit``;
- "less than", "nearly", "almost", "up to", ...: ``c - unit <= x <= c``;
- no qualifier: ``x`` rounds to ``c`` (``|x - c| <= unit/2``) and ``c`` is written with at
  least two significant digits but fewer than ``x`` has, and is not a year ("1.5 million"
  and "49%" round 1,523,400 and 48.7; "300" does not round 312, nor "2010" 2013);

and in every case ``x`` lies within a tenth of ``c``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from .numbers import SCALES
from .text import TextProfile, normalise_numbers, profile_tokens, tokenise

__all__ = ["QUALIFIERS", "approximates", "claim_profile"]

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
# However few digits the claim writes, it stands for a value within a tenth of it: "about
# 100" is not 60, nor "over 200" 290 (and a long chunk has many numbers to meet by chance).
_RELATIVE = Decimal("0.1")


@dataclass(frozen=True, slots=True)
class _Written:
    """A number as the claim writes it."""

    value: Decimal
    unit: Decimal  # the place value of its last significant digit
    significant: int  # its significant digits
    span: int  # tokens: 2 with a scale word ("1.5 million")
    year: bool  # four digits from 1000 to 2100, no scale word


def _canonical(d: Decimal) -> str:
    """The number set's form of a value (:func:`.text.normalise_numbers`): 1500000, 48.7."""
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
    scale = SCALES.get(tokens[i + 1].lower()) if i + 1 < len(tokens) else None
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


def approximates(c: _Written, kind: str | None, x: Decimal) -> bool:
    """Whether the claim number ``c``, after the qualifier ``kind``, approximates the evidence
    value ``x`` (the rules in the module docstring)."""
    if abs(x - c.value) > _RELATIVE * abs(c.value):
        return False
    if kind == "about":
        return abs(x - c.value) * 2 <= c.unit
    if kind == "over":
        return c.value <= x <= c.value + c.unit
    if kind == "under":
        return c.value - c.unit <= x <= c.value
    x_significant = len(x.normalize().as_tuple().digits)
    return not c.year and 2 <= c.significant < x_significant and abs(x - c.value) * 2 <= c.unit


def claim_profile(text: str, evidence_numbers: frozenset[str]) -> TextProfile:
    """The claim's profile (:func:`.text.profile`) with each number the evidence lacks but
    approximates read as that evidence number (the closest), its qualifier dropped."""
    tokens = tokenise(text)
    base = profile_tokens(tokens)
    missing = base.numbers - evidence_numbers
    if not missing or not evidence_numbers:
        return base
    values = []
    for e in evidence_numbers:
        try:
            values.append((Decimal(e), e))
        except InvalidOperation:
            continue
    out: list[str] = []
    i, changed = 0, False
    while i < len(tokens):
        written = _written(tokens, i)
        if written is None or _canonical(written.value) not in missing:
            out.append(tokens[i])
            i += 1
            continue
        kind, qualifier_span = _qualifier(tokens, i)
        near = [(abs(x - written.value), e) for x, e in values if approximates(written, kind, x)]
        if near:
            del out[len(out) - qualifier_span :]
            out.append(min(near)[1])
            changed = True
        else:
            out.extend(tokens[i : i + written.span])
        i += written.span
    return profile_tokens(out) if changed else base
