"""The policy assistant as ``ragpulse eval --app`` functions, in several generator configurations.

Each function takes the question and, optionally, the frozen context
(``chunks=``, what ``--corpus-from-snapshot`` passes) and the conversation
before the turn (``history=``, what ``ragpulse eval`` passes for a case
exported from a conversation), and returns the answer with its chunks. A
follow-up is rewritten from the history as the assistant does (conversation.py);
a question about the asker's own record is answered from the tool result in
the frozen context (the record as it was), else from the records system. The
generator's draws are seeded from the question and the context, so replaying a
case gives the same answer whatever order the cases run in (and the eval's
judgment cache can reuse it).

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
import json
import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from .conversation import FollowUpRewriter
from .corpus import Corpus, load_corpus
from .generator import REFUSALS, GenerationRates, ScriptedGenerator
from .records import training_record, training_sentence
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
        self.rewriter = FollowUpRewriter(self.corpus)
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
            if cid not in self.corpus.by_id:  # a tool's result, not a passage
                continue
            score = (ch.get("score") if isinstance(ch, dict) else getattr(ch, "score", None)) or 0.0
            out.append(RetrievedChunk(self.corpus.by_id[cid], float(score)))
        return out

    def _record(self, chunks: Sequence[Any] | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The asker's training record and its tool chunk: from the frozen context, else looked up."""
        for ch in chunks or ():
            if (
                isinstance(ch, dict)
                and ch.get("source_type") == "tool"
                and ch.get("tool") == "training_record"
            ):
                return json.loads(ch["content"]), [dict(ch)]
        record = training_record("E-0000")
        chunk = {"id": "training_record#1", "content": json.dumps(record), "source_type": "tool",
                 "tool": "training_record", "query": json.dumps({"employee_id": "E-0000"})}  # fmt: skip
        return record, [chunk]

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

    def __call__(
        self, question: str, chunks: Sequence[Any] | None = None, history: Sequence[Any] | None = None
    ) -> dict[str, Any]:
        meaning, standalone = self.rewriter.resolve(question, history)
        asked = next((q for q in self.corpus.tool_questions if q.id == meaning), None)
        lead, tool_chunks = "", []
        if asked is not None:
            record, tool_chunks = self._record(chunks)
            lead = training_sentence(record)
            standalone = self.corpus.template(asked.means).phrasings[0]
        text, context = self._generate(standalone, chunks)
        if lead and text not in REFUSALS:
            text = f"{lead} {text}"
        return {"answer": text, "chunks": [rc.as_dict() for rc in context] + tool_chunks}

    def _generate(self, question: str, chunks: Sequence[Any] | None) -> tuple[str, list[RetrievedChunk]]:
        """The generator's answer to ``question`` from the context, and the context."""
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
        return text.replace("[@", "["), context


class _Configured:
    """One of the module's ``--app`` functions: a :class:`ReplayApp` with its generator's
    configuration, built on the first call (loading the corpus and indexing it takes a while)."""

    def __init__(self, rates: GenerationRates, middle_miss: float = 0.0) -> None:
        self.rates = rates
        self.middle_miss = middle_miss
        self._app: ReplayApp | None = None

    def __call__(
        self, question: str, chunks: Sequence[Any] | None = None, history: Sequence[Any] | None = None
    ) -> dict[str, Any]:
        if self._app is None:
            self._app = ReplayApp(self.rates, middle_miss=self.middle_miss)
        return self._app(question, chunks, history)


careful = _Configured(CAREFUL)
default = _Configured(GenerationRates())
sloppy = _Configured(SLOPPY)
lost_in_the_middle = _Configured(CAREFUL, middle_miss=MIDDLE_MISS)


@lru_cache(maxsize=1)
def _assistant() -> Any:
    from .app import PolicyAssistant

    return PolicyAssistant(top_k=5)


def instrumented(question: str, history: Sequence[Any] | None = None) -> str:
    """The demo's instrumented assistant: only the answer text comes back; the spans carry the rest."""
    return _assistant().answer(question, history=list(history or []))
