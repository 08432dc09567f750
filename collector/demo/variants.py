"""``ragpulse demo --variants``: two generator variants of the policy assistant, split 50/50.

``generator-a`` is the demo's usual generator; ``generator-b`` is a cheaper
model that hallucinates numbers :data:`HALLUCINATION_GAP` more often when the
evidence is sound (everything else equal), so ``ragpulse compare`` has a known
difference to find and a cost-quality trade-off to draw. Each request goes to
one variant by a seeded draw; the variant and its configuration go on the
root span through the public agent API (``RagHandle.set_variant``). The demo
prices both scripted models (:data:`PRICES`, the collector's ``cost.prices``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

__all__ = ["VARIANTS", "PRICES", "HALLUCINATION_GAP", "VariantRouter"]

#: How much more often generator-b hallucinates a number than generator-a (absolute rate).
HALLUCINATION_GAP = 0.15

#: (variant, model, extra hallucinated-number rate)
VARIANTS: tuple[tuple[str, str, float], ...] = (
    ("generator-a", "scripted-policy-writer-1", 0.0),
    ("generator-b", "scripted-policy-writer-1-mini", HALLUCINATION_GAP),
)

#: USD per million tokens of the demo's scripted models (the collector's cost.prices).
PRICES: dict[str, dict[str, float]] = {
    "scripted-policy-writer-1": {"input_per_million": 2.5, "output_per_million": 10.0},
    "scripted-policy-writer-1-mini": {"input_per_million": 0.15, "output_per_million": 0.6},
}


class VariantRouter:
    """One policy assistant per variant and a seeded 50/50 split of the requests between them."""

    def __init__(self, corpus: Any, seed: int, on_answer: Callable[..., None] | None) -> None:
        from ragpulse.policy_rag import GenerationRates, PolicyAssistant

        base = GenerationRates()
        self.assistants = []
        for i, (name, model, gap) in enumerate(VARIANTS):
            rates = GenerationRates(
                missing_condition=base.missing_condition,
                wrong_citation=base.wrong_citation,
                hallucinated_number=base.hallucinated_number + gap,
                false_refusal=base.false_refusal,
            )
            self.assistants.append(
                PolicyAssistant(
                    corpus, seed=seed + 101 * i, rates=rates, on_answer=on_answer, model=model,
                    variant=name, config={"generator": model, "prompt": "policy-v1", "retriever": "bm25-top3"},
                )
            )  # fmt: skip
        self._rng = random.Random(seed + 13)

    def answer(self, question: str, **turn: Any) -> str:
        """Serve ``question`` (with the turn's ``history``, ``session_id``, ``user_id``) by the
        variant the split draws for it."""
        return self.assistants[self._rng.random() < 0.5].answer(question, **turn)
