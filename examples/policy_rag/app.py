"""The policy assistant: a small RAG application, instrumented the way a user would.

Everything ragpulse sees comes through the public agent API
(``from ragpulse.agent import trace_rag, retrieval, generation, tool, agent_step``):
the retrieval step returns its chunks, the generation step its answer text with
``[n]`` citation markers, and the RAG call its question and answer. The
application knows nothing about the collector, the judge or the database.

It is also a chat assistant: ``answer(question, history=..., session_id=..., user_id=...)``
takes the conversation before the turn (OpenAI-style messages, recorded on the root as the
turn's conversation; the session id ties the turns together). With a history, a ``rewrite``
generation turns a follow-up into the standalone question it stands for (conversation.py)
before retrieving. A question about the asker's own record takes the agentic route: an agent
step looks the record up with a tool (``training_record``, records.py), retrieves the policy,
and answers from both, stating the record's date (evidence the judge finds in the tool's
result) before the cited policy.

The injected failure mode of each answer (the ground truth the demo checks
the judge against) is not put on the spans: it goes to the optional
``on_answer`` callback, the way a test harness would keep its own labels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragpulse.agent import agent_step, current_rag, generation, retrieval, tool, trace_rag

from .conversation import FollowUpRewriter
from .corpus import Corpus, ToolQuestion, load_corpus
from .generator import REFUSALS, GeneratedAnswer, GenerationRates, ScriptedGenerator
from .records import training_record, training_sentence
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
        self.rewriter = FollowUpRewriter(self.corpus)
        self.on_answer = on_answer
        self.model = model
        self.variant = variant
        self.config = dict(config or {})

    @retrieval
    def retrieve(self, question: str) -> list[RetrievedChunk]:
        """The top-k passages for the question (id, content, score, metadata each)."""
        return self.retriever.search(question)

    def generate(self, question: str, chunks: list[RetrievedChunk], lead: str = "") -> str:
        """The answer text with [n] citation markers (n = position in ``chunks``, the chunks the
        generation is given), on an LLM span with the model and token counts (estimated from
        words: the generator is scripted). ``lead``: a sentence the agent states first (from a
        tool's result), left out of a refusal."""
        with generation("generate", model=self.model, provider="ragpulse-demo") as g:
            prompt = "\n".join([question, *([lead] if lead else []), *(c.content for c in chunks)])
            g.set_prompt(prompt)
            g.set_chunks(chunks)
            result = self.generator.generate(question, chunks)
            if self.on_answer is not None:
                self.on_answer(question, chunks, result)
            text = f"{lead} {result.text}" if lead and result.text not in REFUSALS else result.text
            g.set_output(text)
            g.set_usage(_tokens(prompt), _tokens(text))
        return text

    def rewrite(self, question: str, history: list[Any]) -> tuple[str | None, str]:
        """(what the turn means, its standalone question), on an LLM span: the follow-up rewrite."""
        with generation("rewrite", model=self.model, provider="ragpulse-demo") as g:
            prompt = "\n".join([*(f"{m['role']}: {m['content']}" for m in history), f"user: {question}"])
            g.set_prompt(prompt)
            meaning, standalone = self.rewriter.resolve(question, history)
            g.set_output(standalone)
            g.set_usage(_tokens(prompt), _tokens(standalone))
        return meaning, standalone

    @tool("training_record")
    def training_record(self, employee_id: str) -> dict[str, Any]:
        """The employee's security awareness training record from the HR system."""
        return training_record(employee_id)

    @agent_step("records-agent")
    def consult(self, question: str, asked: ToolQuestion, employee_id: str) -> str:
        """The agentic route: the asker's record by the tool, the policy by retrieval, one answer."""
        record = self.training_record(employee_id)
        policy = self.corpus.template(asked.means).phrasings[0]
        return self.generate(policy, self.retrieve(policy), lead=training_sentence(record))

    @trace_rag
    def answer(
        self,
        question: str,
        history: list[Any] | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> str:
        """Answer one turn: rewrite a follow-up from the history, then retrieve and generate, or
        consult the asker's record for a question about it."""
        if self.variant:
            current_rag().set_variant(self.variant, **self.config)
        if history:
            meaning, standalone = self.rewrite(question, history)
        else:
            read = self.rewriter.read(question, None)
            meaning, standalone = read[0] if read else None, question
        asked = next((q for q in self.corpus.tool_questions if q.id == meaning), None)
        if asked is not None:
            return self.consult(standalone, asked, user_id or "E-0000")
        return self.generate(standalone, self.retrieve(standalone))


def _tokens(text: str) -> int:
    """A token count estimate: about four tokens for three English words."""
    return (4 * len(text.split()) + 2) // 3
