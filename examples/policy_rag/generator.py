"""A scripted, seeded answer generator that behaves like an LLM with known failure rates.

It stands in for the LLM of the demo's RAG application. Given the question and
the retrieved chunks it writes an answer with citation markers (``[n]`` = the
n-th retrieved chunk), choosing its evidence the way a careful model would:
for each topic the question needs, the highest-ranked current, authoritative
chunk, and only when retrieval brought none of those, the best remaining
chunk on the topic (a superseded version or an unofficial note), which it
then repeats faithfully. That last case is a retrieval failure, produced by
the retriever, not by a coin flip here.

On top of that it injects the generation failures of the article at
configurable rates: a dropped condition, a citation pointing at the wrong
chunk, a changed number, and a refusal although the chunks answer the
question. Every answer comes back with the mode that produced it, so the demo
can compare the judge's verdicts with the truth.

The "script" is the corpus's query templates: a question drawn from a template
is understood as asking about that template's topics (a stand-in for the
language understanding an LLM would bring). Other questions are taken to ask
about the topic of the best-ranked chunk.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from .corpus import Chunk, Corpus
from .rates import Rates
from .retriever import RetrievedChunk

__all__ = [
    "InjectedMode",
    "EXPECTED_JUDGMENT",
    "GenerationRates",
    "GeneratedAnswer",
    "ScriptedGenerator",
    "REFUSALS",
]


class InjectedMode(str, Enum):
    """What the generator did, as ground truth for the judge."""

    FAITHFUL = "faithful"
    SUPERSEDED = "superseded_source"
    MISSING_CONDITION = "missing_condition"
    WRONG_CITATION = "wrong_citation"
    HALLUCINATED_NUMBER = "hallucinated_number"
    APPROPRIATE_REFUSAL = "appropriate_refusal"
    FALSE_REFUSAL = "false_refusal"


#: The judgment a correct judge gives each mode: (failure_mode, abstention_kind).
EXPECTED_JUDGMENT: dict[InjectedMode, tuple[str, str | None]] = {
    InjectedMode.FAITHFUL: ("healthy", None),
    InjectedMode.SUPERSEDED: ("retrieval", None),
    InjectedMode.MISSING_CONDITION: ("generation", None),
    InjectedMode.WRONG_CITATION: ("generation", None),
    InjectedMode.HALLUCINATED_NUMBER: ("generation", None),
    InjectedMode.APPROPRIATE_REFUSAL: ("abstain", "appropriate"),
    InjectedMode.FALSE_REFUSAL: ("abstain", "false_refusal"),
}

REFUSALS: tuple[str, ...] = (
    "The available sources do not establish the rule.",
    "The policy documents I have do not contain this information.",
    "I cannot find this in the retrieved policies.",
)

_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "twelve": 12,
}  # fmt: skip
_NUMBER = re.compile(r"\b(\d+|" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class GenerationRates(Rates):
    """Probabilities of each generation failure when the evidence is sound (the rest is faithful)."""

    missing_condition: float = 0.10
    wrong_citation: float = 0.07
    hallucinated_number: float = 0.07
    false_refusal: float = 0.05

    def __post_init__(self) -> None:
        super().__post_init__()
        total = self.missing_condition + self.wrong_citation + self.hallucinated_number + self.false_refusal
        if total > 1.0:
            raise ValueError("generation failure rates must sum to at most 1")


@dataclass(frozen=True)
class GeneratedAnswer:
    """An answer with the truth about how it was made."""

    text: str
    mode: InjectedMode
    used_chunk_ids: tuple[str, ...] = ()
    detail: str = ""
    expected_failure_mode: str = field(init=False)
    expected_abstention_kind: str | None = field(init=False)

    def __post_init__(self) -> None:
        fm, kind = EXPECTED_JUDGMENT[self.mode]
        object.__setattr__(self, "expected_failure_mode", fm)
        object.__setattr__(self, "expected_abstention_kind", kind)


def _cited(sentence: str, marker: int) -> str:
    """``sentence`` with ``[marker]`` placed before its final full stop."""
    body = sentence.rstrip().rstrip(".")
    return f"{body} [{marker}]."


class ScriptedGenerator:
    """Deterministic (per seed) answer writer with injected failure modes."""

    model = "scripted-policy-writer-1"

    def __init__(self, corpus: Corpus, *, seed: int = 7, rates: GenerationRates | None = None) -> None:
        self.corpus = corpus
        self.rates = rates or GenerationRates()
        self._rng = random.Random(seed)

    # -- evidence selection -------------------------------------------------
    def _topics(self, question: str, chunks: Sequence[RetrievedChunk]) -> tuple[str, ...]:
        template = self.corpus.template_for(question)
        if template is not None:
            return template.topics
        return (chunks[0].chunk.topic,) if chunks else ()

    @staticmethod
    def _evidence(topics: Sequence[str], chunks: Sequence[RetrievedChunk]) -> list[tuple[int, Chunk]]:
        """(1-based position, chunk) used for each topic that retrieval covered, in topic order."""
        chosen: list[tuple[int, Chunk]] = []
        for topic in topics:
            on_topic = [(i, rc.chunk) for i, rc in enumerate(chunks, 1) if rc.chunk.topic == topic]
            sound = [pair for pair in on_topic if pair[1].trustworthy]
            if sound or on_topic:
                chosen.append((sound or on_topic)[0])
        return chosen

    # -- failure injections -------------------------------------------------
    def _drop_condition(self, evidence: list[tuple[int, Chunk]]) -> tuple[list[str], str] | None:
        candidates = [k for k, (_, c) in enumerate(evidence) if len(c.conditions) >= 2]
        if not candidates:
            return None
        k = self._rng.choice(candidates)
        pos, chunk = evidence[k]
        first, second = chunk.conditions[0], chunk.conditions[1]
        keep = self._rng.choice((first, second))
        text = chunk.content.replace(f"{first} and {second}", keep)
        sentences = [_cited(c.content, p) for p, c in evidence]
        sentences[k] = _cited(text, pos)
        return sentences, f"dropped '{second if keep == first else first}' from {chunk.id}"

    def _change_number(self, evidence: list[tuple[int, Chunk]]) -> tuple[list[str], str] | None:
        candidates = [k for k, (_, c) in enumerate(evidence) if _NUMBER.search(c.content)]
        if not candidates:
            return None
        k = self._rng.choice(candidates)
        pos, chunk = evidence[k]
        matches = list(_NUMBER.finditer(chunk.content))
        m = self._rng.choice(matches)
        old = m.group(0)
        value = _NUMBER_WORDS.get(old.lower(), None) or int(old)
        new_value = self._rng.choice([v for v in (2, 3, 4, 6, 7, 10, 14, 20, 45, 90) if v != value])
        new = str(new_value)
        if old.lower() in _NUMBER_WORDS:
            words = {v: w for w, v in _NUMBER_WORDS.items()}
            new = words.get(new_value, new)
        text = chunk.content[: m.start()] + new + chunk.content[m.end() :]
        sentences = [_cited(c.content, p) for p, c in evidence]
        sentences[k] = _cited(text, pos)
        return sentences, f"changed '{old}' to '{new}' in {chunk.id}"

    def _miscite(
        self, evidence: list[tuple[int, Chunk]], chunks: Sequence[RetrievedChunk]
    ) -> tuple[list[str], str] | None:
        used = {p for p, _ in evidence}
        others = [i for i, rc in enumerate(chunks, 1) if i not in used]
        if not others:
            return None
        k = self._rng.randrange(len(evidence))
        wrong = self._rng.choice(others)
        sentences = [_cited(c.content, p) for p, c in evidence]
        sentences[k] = _cited(evidence[k][1].content, wrong)
        return sentences, f"cited [{wrong}] {chunks[wrong - 1].id} for a claim from {evidence[k][1].id}"

    # -- the generator --------------------------------------------------------
    def generate(self, question: str, chunks: Sequence[RetrievedChunk]) -> GeneratedAnswer:
        """Write an answer to ``question`` from ``chunks`` (retrieval order), with its injected mode."""
        evidence = self._evidence(self._topics(question, chunks), chunks)
        if not evidence:
            return GeneratedAnswer(self._rng.choice(REFUSALS), InjectedMode.APPROPRIATE_REFUSAL)
        used = tuple(c.id for _, c in evidence)
        faithful = " ".join(_cited(c.content, p) for p, c in evidence)
        stale = [c.id for _, c in evidence if not c.trustworthy]
        if stale:
            return GeneratedAnswer(
                faithful, InjectedMode.SUPERSEDED, used, f"answered from {', '.join(stale)}"
            )

        r = self.rates
        draw = self._rng.random()
        plan: list[tuple[float, InjectedMode]] = [
            (r.missing_condition, InjectedMode.MISSING_CONDITION),
            (r.wrong_citation, InjectedMode.WRONG_CITATION),
            (r.hallucinated_number, InjectedMode.HALLUCINATED_NUMBER),
            (r.false_refusal, InjectedMode.FALSE_REFUSAL),
        ]
        mode = InjectedMode.FAITHFUL
        for rate, candidate in plan:
            if draw < rate:
                mode = candidate
                break
            draw -= rate

        if mode is InjectedMode.FALSE_REFUSAL:
            return GeneratedAnswer(
                self._rng.choice(REFUSALS), mode, (), f"refused although {used[0]} answers it"
            )
        injected = None
        if mode is InjectedMode.MISSING_CONDITION:
            injected = self._drop_condition(evidence)
        elif mode is InjectedMode.HALLUCINATED_NUMBER:
            injected = self._change_number(evidence)
        elif mode is InjectedMode.WRONG_CITATION:
            injected = self._miscite(evidence, chunks)
        if injected is None:  # the evidence gives this failure no purchase: the answer stays faithful
            return GeneratedAnswer(faithful, InjectedMode.FAITHFUL, used)
        sentences, detail = injected
        return GeneratedAnswer(" ".join(sentences), mode, used, detail)
