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

from ragpulse.agent import generation, retrieval, trace_rag

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
    ) -> None:
        self.corpus = corpus or load_corpus()
        self.retriever = PolicyRetriever(self.corpus, top_k=top_k)
        self.generator = ScriptedGenerator(self.corpus, seed=seed, rates=rates)
        self.on_answer = on_answer

    @retrieval
    def retrieve(self, question: str) -> list[RetrievedChunk]:
        """The top-k passages for the question (id, content, score, metadata each)."""
        return self.retriever.search(question)

    @generation(model=ScriptedGenerator.model, provider="ragpulse-demo")
    def generate(self, question: str, chunks: list[RetrievedChunk]) -> str:
        """The answer text with [n] citation markers (n = position in ``chunks``)."""
        result = self.generator.generate(question, chunks)
        if self.on_answer is not None:
            self.on_answer(question, chunks, result)
        return result.text

    @trace_rag
    def answer(self, question: str) -> str:
        """Answer one question: retrieve, then generate."""
        return self.generate(question, self.retrieve(question))
