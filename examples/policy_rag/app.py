"""The policy assistant: a small RAG application, instrumented the way a user would.

Everything ragpulse sees comes through the public agent API
(``from ragpulse.agent import trace_rag, retrieval, generation``): the
retrieval step returns its chunks, the generation step its answer text with
``[n]`` citation markers, and the RAG call its question and answer. The
application knows nothing about the collector, the judge or the database.

The injected failure mode of each answer (the ground truth the demo checks
the judge against) is not put on the spans: it goes to the optional
``on_answer`` callback, the way a test harness would keep its own labels.
"""

from __future__ import annotations

from collections.abc import Callable

from ragpulse.agent import current_rag, generation, retrieval, trace_rag

from .corpus import Corpus, load_corpus
from .generator import GeneratedAnswer, GenerationRates, ScriptedGenerator
from .retriever import PolicyRetriever, RetrievedChunk

__all__ = ["PolicyAssistant", "AnswerCallback"]

#: Called inside the traced RAG call with the question, the retrieved chunks and the generated answer.
AnswerCallback = Callable[[str, list[RetrievedChunk], GeneratedAnswer], None]


class PolicyAssistant:
    """Answers policy questions from the corpus: BM25 retrieval, then the scripted generator."""

    def __init__(
        self,
        corpus: Corpus | None = None,
        *,
        top_k: int = 3,
        seed: int = 7,
        rates: GenerationRates | None = None,
        on_answer: AnswerCallback | None = None,
        model: str = ScriptedGenerator.model,
        variant: str | None = None,
        config: dict[str, str] | None = None,
    ) -> None:
        """``model`` names the generator on its span (what the collector prices); ``variant`` and
        ``config`` go on every answer's root span (``rag.variant``, ``rag.config.*``)."""
        self.corpus = corpus or load_corpus()
        self.retriever = PolicyRetriever(self.corpus, top_k=top_k)
        self.generator = ScriptedGenerator(self.corpus, seed=seed, rates=rates)
        self.on_answer = on_answer
        self.model = model
        self.variant = variant
        self.config = dict(config or {})

    @retrieval
    def retrieve(self, question: str) -> list[RetrievedChunk]:
        """The top-k passages for the question (id, content, score, metadata each)."""
        return self.retriever.search(question)

    def generate(self, question: str, chunks: list[RetrievedChunk]) -> str:
        """The answer text with [n] citation markers (n = position in ``chunks``), on an LLM span
        with the model and token counts (estimated from words: the generator is scripted)."""
        with generation("generate", model=self.model, provider="ragpulse-demo") as g:
            prompt = question + "\n" + "\n".join(c.content for c in chunks)
            g.set_prompt(prompt)
            result = self.generator.generate(question, chunks)
            if self.on_answer is not None:
                self.on_answer(question, chunks, result)
            g.set_output(result.text)
            g.set_usage(_tokens(prompt), _tokens(result.text))
        return result.text

    @trace_rag
    def answer(self, question: str) -> str:
        """Answer one question: retrieve, then generate."""
        if self.variant:
            current_rag().set_variant(self.variant, **self.config)
        return self.generate(question, self.retrieve(question))


def _tokens(text: str) -> int:
    """A token count estimate: about four tokens for three English words."""
    return (4 * len(text.split()) + 2) // 3
