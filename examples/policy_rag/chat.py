"""Chat traffic: the demo's users in sessions, each turn answered with the conversation before it.

A session opens with a question drawn as the single-question stream draws it, or (at
``own_record``) with a question about the asker's own training record, which the app's agent
answers with a tool. After each answer the user, as people do:

- asks the same again, retyped (lower case, no question mark), when the answer was a refusal,
  at ``reask``: the collector's re-ask detection sees it (a refusal of an answerable question
  is a flagged turn followed by a re-ask);
- else asks a follow-up of the question (``data/queries.json`` ``follow_ups``), at
  ``follow_up``, when the question has one;
- else asks another question in the same session, at ``another``;
- else leaves: the session ends (on a flagged answer, an abandonment).

Sessions run one after another, at most ``max_turns`` turns each; the session ids and user ids
are drawn from the traffic's seed, so a run is the same for the same seed and answers.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .generator import REFUSALS
from .rates import Rates

if TYPE_CHECKING:
    from .traffic import Answer, Request, TrafficModel

__all__ = ["ChatRates", "chat"]


@dataclass(frozen=True)
class ChatRates(Rates):
    """How the simulated users continue a session (see the module docstring)."""

    reask: float = 0.6
    follow_up: float = 0.45
    another: float = 0.2
    own_record: float = 0.05
    max_turns: int = 6

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")


def _retyped(question: str) -> str:
    """The question typed again in a hurry: lower case, without its question mark."""
    return question.rstrip().rstrip("?").lower()


class _Users:
    """Draws the turns of the sessions (one seeded generator for every choice)."""

    def __init__(self, model: TrafficModel, rates: ChatRates) -> None:
        self.model = model
        self.rates = rates
        self.rng = random.Random(f"chat-{model.seed}")
        self.corpus = model.corpus

    def opening(self, seq: int, session: str, user: str) -> Request:
        from .traffic import Request

        if self.corpus.tool_questions and self.rng.random() < self.rates.own_record:
            q = self.rng.choice(self.corpus.tool_questions)
            return Request(seq, self.rng.choice(q.phrasings), q.id, "own_record", session, user, 1)
        r = self.model.draw(seq)
        return Request(seq, r.question, r.template_id, r.wording, session, user, 1)

    def next_turn(self, seq: int, last: Request, answer: str) -> Request | None:
        """The user's next turn after ``answer`` to ``last``, or None when the user leaves."""
        from .traffic import Request

        if last.turn >= self.rates.max_turns:
            return None
        turn = last.turn + 1
        if answer in REFUSALS and self.rng.random() < self.rates.reask:
            question = _retyped(last.question)
            return Request(seq, question, last.template_id, "reask", last.session_id, last.user_id, turn)
        follow_ups = self.corpus.follow_ups_after(last.template_id)
        if follow_ups and self.rng.random() < self.rates.follow_up:
            f = self.rng.choice(follow_ups)
            wording = "own_record" if f.means.startswith("T") else "follow_up"
            question = self.rng.choice(f.phrasings)
            return Request(seq, question, f.means, wording, last.session_id, last.user_id, turn)
        if self.rng.random() < self.rates.another:
            fresh = self.opening(seq, last.session_id, last.user_id)
            return Request(seq, fresh.question, fresh.template_id, fresh.wording, last.session_id,
                           last.user_id, turn)  # fmt: skip
        return None


def chat(model: TrafficModel, n: int, answer: Answer, rates: ChatRates) -> Iterator[tuple[Request, str]]:
    """``n`` turns of chat traffic (see the module docstring), each answered by ``answer``."""
    users = _Users(model, rates)
    seq, k = 0, 0
    while seq < n:
        k += 1
        session, user = f"chat-{model.seed}-{k:05d}", f"E-{1000 + users.rng.randrange(500)}"
        req: Request | None = users.opening(seq, session, user)
        history: list[dict[str, Any]] = []
        while req is not None and seq < n:
            text = answer(req, list(history))
            yield req, text
            seq += 1
            history += [{"role": "user", "content": req.question}, {"role": "assistant", "content": text}]
            req = users.next_turn(seq, req, text)
