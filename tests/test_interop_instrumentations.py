"""Real third-party instrumentation -> the embedded collector: what is stored is what the app produced.

Each test runs a small RAG application on the real library with the library's real OTel
instrumentor (the versions pinned in pyproject.toml's ``dev`` extra) and a fake LLM the library
ships or documents (no network): two calls, one answer citing the right chunk and one citing
the wrong one. The stored query, answer, chunk ids, contents, scores and citations must equal
what the application produced, the first judged healthy and the second a generation failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .interop import (
    CORPUS,
    QUESTION,
    RIGHT,
    SCORES,
    WRONG,
    Expected,
    Pipeline,
    check_right_and_wrong,
    check_stored,
    metadata_of,
    openllmetry_langchain,
)

pytest.importorskip("langchain_core")


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    with Pipeline(Path(tmp_path_factory.mktemp("interop")) / "db") as pipeline:
        yield pipeline


# -- LangChain ---------------------------------------------------------------------------------
def _langchain_parts(responses: list[str]) -> tuple[Any, Any, Any]:
    """A retriever over CORPUS (LangChain Documents, no ids, no scores), a prompt and a fake chat model."""
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever

    class PolicyRetriever(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Document]:
            return [Document(page_content=text, metadata=dict(meta)) for text, meta in CORPUS]

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer only from the context and cite it as [n].\n{context}"), ("human", "{question}")]
    )
    return PolicyRetriever(), prompt, FakeListChatModel(responses=responses)


def _context(docs: list[Any]) -> str:
    return "\n".join(f"[{i}] {d.page_content}" for i, d in enumerate(docs, 1))


def _langchain_expected(answer: str) -> Expected:
    """LangChain Documents carry no id or score: the chunks are their 1-based positions."""
    return Expected(QUESTION, answer, ["1", "2", "3"], [c for c, _ in CORPUS], [None, None, None])


def _string_chain() -> Any:
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    retriever, prompt, llm = _langchain_parts([RIGHT, WRONG])
    return (
        {"context": retriever | RunnableLambda(_context), "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )


def _dict_chain() -> Any:
    """The shape of langchain's create_retrieval_chain: {"input"} in, {"input", "context", "answer"} out."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    retriever, prompt, llm = _langchain_parts([RIGHT, WRONG])
    answer = (
        RunnableLambda(lambda x: {"context": _context(x["context"]), "question": x["input"]}) | prompt | llm
    )
    return RunnablePassthrough.assign(context=RunnableLambda(lambda x: x["input"]) | retriever).assign(
        answer=answer | StrOutputParser()
    )


@pytest.fixture
def openinference_langchain(pipe: Pipeline) -> Iterator[None]:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=pipe.provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


def test_langchain_openinference_string_output(pipe: Pipeline, openinference_langchain: None) -> None:
    chain = _string_chain()
    answers = [chain.invoke(QUESTION), chain.invoke(QUESTION)]
    assert answers == [RIGHT, WRONG]
    row = check_right_and_wrong(pipe, answers, _langchain_expected, "openinference")
    assert metadata_of(row) == [meta for _, meta in CORPUS]


def test_langchain_openinference_dict_output(pipe: Pipeline, openinference_langchain: None) -> None:
    chain = _dict_chain()
    outputs = [chain.invoke({"input": QUESTION}), chain.invoke({"input": QUESTION})]
    assert [o["answer"] for o in outputs] == [RIGHT, WRONG] and len(outputs[0]["context"]) == 3
    check_right_and_wrong(pipe, [o["answer"] for o in outputs], _langchain_expected, "openinference")


@pytest.mark.parametrize("shape", ["string", "dict"])
def test_langchain_openllmetry(pipe: Pipeline, shape: str) -> None:
    """OpenLLMetry writes workflow/task spans, a vector_db_retrieve span with the documents in
    traceloop.entity.output, and gen_ai.input/output.messages JSON on the chat span."""
    with openllmetry_langchain(pipe.provider):
        if shape == "string":
            chain = _string_chain()
            answers = [chain.invoke(QUESTION), chain.invoke(QUESTION)]
        else:
            chain = _dict_chain()
            answers = [chain.invoke({"input": QUESTION})["answer"] for _ in range(2)]
    assert answers == [RIGHT, WRONG]
    row = check_right_and_wrong(pipe, answers, _langchain_expected, "openllmetry")
    assert metadata_of(row) == [meta for _, meta in CORPUS]


# -- LlamaIndex --------------------------------------------------------------------------------
def _llama_index_engine(responses: list[str]) -> tuple[Any, list[Any]]:
    """A RetrieverQueryEngine over CORPUS (nodes with ids and scores) and a scripted CustomLLM."""
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    nodes = [
        NodeWithScore(
            node=TextNode(id_=f"{meta['source']}#p{meta['page']}", text=text, metadata=dict(meta)), score=s
        )
        for (text, meta), s in zip(CORPUS, SCORES, strict=True)
    ]

    class PolicyRetriever(BaseRetriever):
        def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            return list(nodes)

    class ScriptedLLM(CustomLLM):
        """Answers with the next scripted response (llama-index's documented custom-LLM extension point)."""

        script: list[str] = []

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=self.script.pop(0))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError("the test application does not stream")

    engine = RetrieverQueryEngine.from_args(PolicyRetriever(), llm=ScriptedLLM(script=list(responses)))
    return engine, nodes


def test_llama_index_openinference(pipe: Pipeline) -> None:
    pytest.importorskip("llama_index.core")
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=pipe.provider)
    try:
        engine, nodes = _llama_index_engine([RIGHT, WRONG])
        responses = [engine.query(QUESTION), engine.query(QUESTION)]
    finally:
        instrumentor.uninstrument()
    answers = [str(r) for r in responses]
    assert answers == [RIGHT, WRONG]
    pipe.flush()
    right, wrong = pipe.root_trace_ids()[-2:]
    for trace_id, response, mode in ((right, responses[0], "healthy"), (wrong, responses[1], "generation")):
        used = response.source_nodes  # what the engine answered from, app side
        want = Expected(
            QUESTION, str(response), [n.node.node_id for n in used], [n.node.get_content() for n in used],
            [n.score for n in used],
        )  # fmt: skip
        assert want.ids == [n.node.node_id for n in nodes]
        check_stored(pipe, trace_id, want, "openinference", mode)
