"""The demo's user traffic: a seeded stream of questions drawn from the query templates.

Most questions use the current policy's wording; some use the wording of an
old version or of an unofficial note (people remember the rule they learned),
and some ask about things the corpus does not cover. The rates are
parameters so a test can move them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from .corpus import Corpus, QueryTemplate

__all__ = ["Request", "TrafficModel"]


@dataclass(frozen=True)
class Request:
    """One question a user asks, with where it came from."""

    seq: int
    question: str
    template_id: str
    wording: str  # current | legacy | out_of_scope


class TrafficModel:
    """Seeded question stream: ``legacy_rate`` of answerable questions in old wording, ``out_of_scope_rate`` unanswerable."""

    def __init__(
        self, corpus: Corpus, *, seed: int = 11, legacy_rate: float = 0.12, out_of_scope_rate: float = 0.06
    ) -> None:
        if not (0.0 <= legacy_rate <= 1.0 and 0.0 <= out_of_scope_rate <= 1.0):
            raise ValueError("rates must be within [0, 1]")
        self._rng = random.Random(seed)
        self.legacy_rate = legacy_rate
        self.out_of_scope_rate = out_of_scope_rate
        self._answerable = [t for t in corpus.templates if t.answerable]
        self._legacy = [t for t in self._answerable if t.legacy_phrasings]
        self._unanswerable = [t for t in corpus.templates if not t.answerable]

    def _pick(self, pool: list[QueryTemplate]) -> QueryTemplate:
        return self._rng.choice(pool)

    def requests(self, n: int) -> Iterator[Request]:
        """``n`` requests, deterministic for the seed."""
        for seq in range(n):
            draw = self._rng.random()
            if draw < self.out_of_scope_rate and self._unanswerable:
                t = self._pick(self._unanswerable)
                yield Request(seq, self._rng.choice(t.phrasings), t.id, "out_of_scope")
            elif draw < self.out_of_scope_rate + self.legacy_rate and self._legacy:
                t = self._pick(self._legacy)
                yield Request(seq, self._rng.choice(t.legacy_phrasings), t.id, "legacy")
            else:
                t = self._pick(self._answerable)
                yield Request(seq, self._rng.choice(t.phrasings), t.id, "current")
