"""The policy assistant as ``ragpulse eval --app`` functions, in several generator configurations.

Each function takes the question and, optionally, the frozen context
(``chunks=``, what ``--corpus-from-snapshot`` passes) and returns the answer
with its chunks. The generator's draws are seeded from the question and the
context, so replaying a case gives the same answer whatever order the cases
run in (and the eval's judgment cache can reuse it).

- ``careful``: the generator makes no injected generation failures;
- ``default``: the demo's rates (docs/demo.md);
- ``sloppy``: drops conditions, changes numbers, miscites and refuses often;
- ``lost_in_the_middle``: careful, but overlooks chunks in the middle of
  the context (up to ``MIDDLE_MISS`` at the centre, never at the ends), the
  positional failure of Liu et al. that ``--sweep-position`` measures;
- ``instrumented``: :class:`~.app.PolicyAssistant` itself, returning only the
  answer text; the eval reads chunks and citations from its ragpulse spans.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

from .corpus import Corpus, load_corpus
from .generator import GenerationRates, ScriptedGenerator
from .retriever import PolicyRetriever, RetrievedChunk

__all__ = ["ReplayApp", "careful", "default", "sloppy", "lost_in_the_middle", "instrumented", "MIDDLE_MISS"]

MIDDLE_MISS = 0.9
CAREFUL = GenerationRates(
    missing_condition=0.0, wrong_citation=0.0, hallucinated_number=0.0, false_refusal=0.0
)
SLOPPY = GenerationRates(
    missing_condition=0.3, wrong_citation=0.2, hallucinated_number=0.2, false_refusal=0.1
)


def _seed(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:12], 16)


class ReplayApp:
    """Retrieval (unless given the context) plus the scripted generator at fixed rates."""

    def __init__(
        self, rates: GenerationRates, *, middle_miss: float = 0.0, top_k: int = 5, seed: int = 7
    ) -> None:
        self.corpus: Corpus = load_corpus()
        self.retriever = PolicyRetriever(self.corpus, top_k=top_k)
        self.rates = rates
        self.middle_miss = middle_miss
        self.seed = seed

    def _context(self, question: str, chunks: Sequence[Any] | None) -> list[RetrievedChunk]:
        if chunks is None:
            return self.retriever.search(question)
        out = []
        for ch in chunks:
            cid = ch["id"] if isinstance(ch, dict) else ch.id
            score = (ch.get("score") if isinstance(ch, dict) else getattr(ch, "score", None)) or 0.0
            out.append(RetrievedChunk(self.corpus.by_id[cid], float(score)))
        return out

    def _noticed(self, context: list[RetrievedChunk], rng: random.Random) -> list[tuple[int, RetrievedChunk]]:
        """(1-based position, chunk) of the chunks the generator reads: a miss chance rising to
        ``middle_miss`` at the centre of the context and 0 at both ends (a U-shaped use curve)."""
        n = len(context)
        kept = []
        for i, rc in enumerate(context):
            depth = 1.0 - abs(2.0 * i / (n - 1) - 1.0) if n > 2 else 0.0
            if rng.random() >= self.middle_miss * depth:
                kept.append((i + 1, rc))
        return kept

    def __call__(self, question: str, chunks: Sequence[Any] | None = None) -> dict[str, Any]:
        context = self._context(question, chunks)
        ids = [rc.id for rc in context]
        rng = random.Random(_seed(str(self.seed), question, *ids))
        noticed = self._noticed(context, rng) if self.middle_miss else list(enumerate(context, 1))
        generator = ScriptedGenerator(self.corpus, seed=rng.randrange(1 << 30), rates=self.rates)
        seen = [rc for _, rc in noticed]
        text = generator.generate(question, seen).text
        # The generator numbers citations by the chunks it read; map them back to context positions.
        for k, (pos, _) in sorted(enumerate(noticed, 1), key=lambda kv: -kv[0]):
            text = text.replace(f"[{k}]", f"[@{pos}]")
        text = text.replace("[@", "[")
        return {"answer": text, "chunks": [rc.as_dict() for rc in context]}


@cache
def _app(name: str) -> ReplayApp:
    if name == "careful":
        return ReplayApp(CAREFUL)
    if name == "sloppy":
        return ReplayApp(SLOPPY)
    if name == "lost_in_the_middle":
        return ReplayApp(CAREFUL, middle_miss=MIDDLE_MISS)
    return ReplayApp(GenerationRates())


def careful(question: str, chunks: Sequence[Any] | None = None) -> dict[str, Any]:
    return _app("careful")(question, chunks)


def default(question: str, chunks: Sequence[Any] | None = None) -> dict[str, Any]:
    return _app("default")(question, chunks)


def sloppy(question: str, chunks: Sequence[Any] | None = None) -> dict[str, Any]:
    return _app("sloppy")(question, chunks)


def lost_in_the_middle(question: str, chunks: Sequence[Any] | None = None) -> dict[str, Any]:
    return _app("lost_in_the_middle")(question, chunks)


@lru_cache(maxsize=1)
def _assistant() -> Any:
    from .app import PolicyAssistant

    return PolicyAssistant(top_k=5)


def instrumented(question: str) -> str:
    """The demo's instrumented assistant: only the answer text comes back; the spans carry the rest."""
    return _assistant().answer(question)
