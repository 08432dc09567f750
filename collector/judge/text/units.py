"""Units of measurement a number can be written in, and their conversions.

An answer restates its source's quantities in other units: "2.5 hours" for "150 minutes",
"six weeks" for "42 days", "about 62 miles" for "100 km". :func:`quantity_at` reads a number
followed by a unit word as a value in its dimension's base unit (seconds, metres, grams), so
:mod:`.approximate` can compare quantities across units. Months and years are the mean
Gregorian ones; temperature is left out (its scales are not proportional).
"""

from __future__ import annotations

from decimal import Decimal

__all__ = ["UNITS", "quantity_at"]

_DAY = Decimal(86400)
_TIME = {
    "second": Decimal(1),
    "minute": Decimal(60),
    "hour": Decimal(3600),
    "day": _DAY,
    "week": 7 * _DAY,
    "month": Decimal("30.436875") * _DAY,
    "year": Decimal("365.2425") * _DAY,
}
_LENGTH = {
    "millimetre": Decimal("0.001"),
    "centimetre": Decimal("0.01"),
    "metre": Decimal(1),
    "kilometre": Decimal(1000),
    "inch": Decimal("0.0254"),
    "foot": Decimal("0.3048"),
    "yard": Decimal("0.9144"),
    "mile": Decimal("1609.344"),
}
_MASS = {
    "gram": Decimal(1),
    "kilogram": Decimal(1000),
    "ounce": Decimal("28.349523125"),
    "pound": Decimal("453.59237"),
    "tonne": Decimal(1_000_000),
}
# Every written form (lower case) of each unit, singular and plural, spelt out and abbreviated.
_FORMS = {
    "second": "second seconds sec secs",
    "minute": "minute minutes min mins",
    "hour": "hour hours hr hrs",
    "day": "day days",
    "week": "week weeks",
    "month": "month months",
    "year": "year years yr yrs",
    "millimetre": "millimetre millimetres millimeter millimeters mm",
    "centimetre": "centimetre centimetres centimeter centimeters cm",
    "metre": "metre metres meter meters",
    "kilometre": "kilometre kilometres kilometer kilometers km kms",
    "inch": "inch inches",
    "foot": "foot feet ft",
    "yard": "yard yards",
    "mile": "mile miles",
    "gram": "gram grams",
    "kilogram": "kilogram kilograms kg kgs kilo kilos",
    "ounce": "ounce ounces oz",
    "pound": "pound pounds lb lbs",
    "tonne": "tonne tonnes",
}
# unit word -> (dimension, the unit's name, its size in the dimension's base unit)
UNITS: dict[str, tuple[str, str, Decimal]] = {
    form: (dimension, name, size)
    for dimension, table in (("time", _TIME), ("length", _LENGTH), ("mass", _MASS))
    for name, size in table.items()
    for form in _FORMS[name].split()
}


def quantity_at(tokens: list[str], i: int) -> tuple[str, str, Decimal] | None:
    """The unit written right after position ``i`` (the last token of a number): its
    dimension, name and size in the dimension's base unit; None when there is none."""
    return UNITS.get(tokens[i + 1].lower()) if i + 1 < len(tokens) else None
