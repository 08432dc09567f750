"""The demo's rates: probabilities of what its simulated users and its generator do, checked once."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["Rates", "check_rates"]


def check_rates(what: str, *rates: float) -> None:
    """Raise ``ValueError`` unless every one of ``rates`` is a probability (within [0, 1])."""
    if not all(0.0 <= r <= 1.0 for r in rates):
        raise ValueError(f"{what} must be within [0, 1]")


@dataclass(frozen=True)
class Rates:
    """Base of a frozen set of rates: every ``float`` field is a probability, checked at creation."""

    def __post_init__(self) -> None:
        rates = [getattr(self, f.name) for f in fields(self) if f.type in (float, "float")]
        check_rates(f"{type(self).__name__} fields", *rates)
