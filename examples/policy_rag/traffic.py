"""The demo's user traffic: a seeded stream of questions drawn from the query templates.

Most questions use the current policy's wording; some use the wording of an
old version or of an unofficial note (people remember the rule they learned),
and some ask about things the corpus does not cover. The rates are
parameters so a test can move them.

:meth:`TrafficModel.requests` is a stream of single questions;
:meth:`TrafficModel.conversations` is chat traffic (:mod:`.chat`): sessions of turns with
their history, follow-ups, re-asks after a refusal and questions about the asker's own record.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .corpus import Corpus, QueryTemplate
from .rates import check_rates

__all__ = ["Answer", "Request", "TrafficModel"]


@dataclass(frozen=True)
class Request:
    """One question a user asks, with where it came from (and, in chat traffic, its session)."""

    seq: int
    question: str
    template_id: str
    wording: str  # current | legacy | out_of_scope; in chat traffic also follow_up | reask | own_record
    session_id: str = ""
    user_id: str = ""
    turn: int = 0  # 1-based turn of its session (0: no session)


#: Answers one request of chat traffic given the conversation before it.
Answer = Callable[["Request", list[dict[str, Any]]], str]


class TrafficModel:
    """Seeded question stream: ``legacy_rate`` of answerable questions in old wording, ``out_of_scope_rate`` unanswerable."""

    def __init__(
        self, corpus: Corpus, *, seed: int = 11, legacy_rate: float = 0.12, out_of_scope_rate: float = 0.06
    ) -> None:
        check_rates("legacy_rate and out_of_scope_rate", legacy_rate, out_of_scope_rate)
        self._rng = random.Random(seed)
        self.seed = seed
        self.corpus = corpus
        self.legacy_rate = legacy_rate
        self.out_of_scope_rate = out_of_scope_rate
        self._answerable = [t for t in corpus.templates if t.answerable]
        self._legacy = [t for t in self._answerable if t.legacy_phrasings]
        self._unanswerable = [t for t in corpus.templates if not t.answerable]

    def _pick(self, pool: list[QueryTemplate]) -> QueryTemplate:
        return self._rng.choice(pool)

    def draw(self, seq: int) -> Request:
        """One question (the next draw of the seeded stream)."""
        draw = self._rng.random()
        if draw < self.out_of_scope_rate and self._unanswerable:
            t = self._pick(self._unanswerable)
            return Request(seq, self._rng.choice(t.phrasings), t.id, "out_of_scope")
        if draw < self.out_of_scope_rate + self.legacy_rate and self._legacy:
            t = self._pick(self._legacy)
            return Request(seq, self._rng.choice(t.legacy_phrasings), t.id, "legacy")
        t = self._pick(self._answerable)
        return Request(seq, self._rng.choice(t.phrasings), t.id, "current")

    def requests(self, n: int) -> Iterator[Request]:
        """``n`` requests, deterministic for the seed."""
        for seq in range(n):
            yield self.draw(seq)

    def conversations(self, n: int, answer: Answer, **rates: float) -> Iterator[tuple[Request, str]]:
        """``n`` turns of chat traffic, each answered by ``answer(request, history)`` (the history
        before it: OpenAI-style messages); yields each request with its answer. Deterministic
        for the seed and the answers. ``rates``: :class:`.chat.ChatRates` fields."""
        from .chat import ChatRates, chat

        yield from chat(self, n, answer, ChatRates(**rates))
