"""The span conventions: every attribute key and event name the agent writes and the collector reads.

One definition for the agent (``materialize.py`` writes them) and the
collector (``ingest/assemble.py`` reads them; ``demo/synthetic.py`` writes
synthetic traces with them). It lives in the agent because the agent must
stay light (it depends on OpenTelemetry only) and the collector already
depends on the agent's package; the collector's own contract is
``collector/contract.py``. ``tests/test_contract.py`` fails when a key is
spelled as a literal anywhere else in ``agent/`` or ``collector/``.

Three vocabularies meet here, and assembly understands all three:

* OpenInference (``openinference.span.kind``, ``input.value``,
  ``retrieval.documents.<i>.document.*``, ``llm.*``): what LangChain and
  LlamaIndex instrumentors write;
* the OpenTelemetry GenAI conventions (``gen_ai.*``, semantic conventions 1.42) and
  OpenLLMetry, which writes them plus its ``traceloop.*`` workflow/task keys;
* ragpulse's own ``rag.*`` keys: the root span of an answer, its citation
  events and what the agent records about truncation and streaming.

Plain constants only: the agent imports this module, and it must stay light.
"""

from __future__ import annotations

__all__ = [
    "SPAN_KIND", "KIND_RETRIEVER", "KIND_RERANKER", "KIND_LLM", "KIND_CHAIN", "KIND_AGENT", "KIND_TOOL",
    "INPUT_VALUE", "OUTPUT_VALUE", "INPUT_MIME_TYPE", "OUTPUT_MIME_TYPE", "MIME_JSON",
    "RETRIEVAL_DOCUMENTS", "RERANKER_OUTPUT_DOCUMENTS", "DOCUMENT_FIELDS", "DOCUMENT_SOURCE", "document_key",
    "LLM_MODEL_NAME", "LLM_PROVIDER", "LLM_TOKEN_COUNT_PROMPT", "LLM_TOKEN_COUNT_COMPLETION",
    "LLM_INPUT_MESSAGES", "LLM_OUTPUT_MESSAGES", "LLM_OUTPUT_MESSAGE_CONTENT", "MESSAGE_ROLE", "MESSAGE_CONTENT",
    "MESSAGE_NAME", "MESSAGE_TOOL_CALL_ID", "MESSAGE_TOOL_CALLS", "TOOL_CALL_ID", "TOOL_CALL_FUNCTION_NAME",
    "TOOL_CALL_FUNCTION_ARGUMENTS", "message_key", "tool_call_key",
    "TOOL_NAME", "TOOL_DESCRIPTION", "AGENT_NAME",
    "GEN_AI_OPERATION", "GEN_AI_SYSTEM", "GEN_AI_PROVIDER", "GEN_AI_REQUEST_MODEL", "GEN_AI_RESPONSE_MODEL",
    "GEN_AI_REQUEST_TOP_K", "GEN_AI_INPUT_TOKENS", "GEN_AI_OUTPUT_TOKENS",
    "GEN_AI_INPUT_MESSAGES", "GEN_AI_OUTPUT_MESSAGES", "GEN_AI_SYSTEM_INSTRUCTIONS",
    "GEN_AI_RETRIEVAL_DOCUMENTS", "GEN_AI_RETRIEVAL_QUERY", "GEN_AI_DATA_SOURCE_ID",
    "GEN_AI_PROMPT", "GEN_AI_COMPLETION", "GEN_AI_COMPLETION_CONTENT", "GEN_AI_ROLE", "GEN_AI_CONTENT",
    "GEN_AI_PARTS", "PART_TYPE", "PART_TEXT", "PART_TOOL_CALL", "PART_TOOL_CALL_RESPONSE", "PART_ID", "PART_NAME",
    "PART_ARGUMENTS", "PART_RESPONSE", "ROLE_SYSTEM", "ROLE_USER", "ROLE_ASSISTANT", "ROLE_TOOL",
    "GEN_AI_TOOL_NAME", "GEN_AI_TOOL_DESCRIPTION", "GEN_AI_TOOL_TYPE", "TOOL_TYPE_FUNCTION", "GEN_AI_TOOL_CALL_ID",
    "GEN_AI_TOOL_CALL_ARGUMENTS", "GEN_AI_TOOL_CALL_RESULT",
    "GEN_AI_AGENT_NAME", "GEN_AI_AGENT_ID", "GEN_AI_AGENT_DESCRIPTION", "GEN_AI_CONVERSATION_ID",
    "OP_RETRIEVAL", "OP_CHAT", "OP_RERANK", "OP_EXECUTE_TOOL", "OP_INVOKE_AGENT",
    "RETRIEVAL_OPS", "LLM_OPS", "CHAIN_OPS", "TOOL_OPS",
    "TRACELOOP_SPAN_KIND", "TRACELOOP_WORKFLOW", "TRACELOOP_ENTITY_INPUT", "TRACELOOP_ENTITY_OUTPUT",
    "RAG_ROOT", "RAG_CORPUS_VERSION", "RAG_RISK_LEVEL", "RAG_QUERY_TYPE", "RAG_FEEDBACK",
    "RAG_VARIANT", "RAG_CONFIG", "CONFIG_FIELDS", "config_key", "RAG_REQUEST_ID",
    "FEEDBACK_SPAN", "FEEDBACK_KIND", "FEEDBACK_VALUE", "FEEDBACK_LABEL", "FEEDBACK_COMMENT", "FEEDBACK_SOURCE",
    "RAG_DOCUMENTS_COUNT", "RAG_CITATION_COUNT", "RAG_STREAM", "RAG_STREAM_CLOSED_EARLY",
    "RAG_CONVERSATION_COUNT", "GENERATION_DOCUMENTS",
    "RAG_TRUNCATED", "RAG_TRUNCATED_FIELDS",
    "CITATION_EVENT", "CITATION_DOCUMENT_ID", "CITATION_MARKER", "CITATION_START", "CITATION_END",
    "SESSION_ID", "USER_ID", "HTTP_ROUTE", "SERVICE_NAME", "EXCEPTION_MESSAGE",
]  # fmt: skip

# -- OpenInference ---------------------------------------------------------------------------
SPAN_KIND = "openinference.span.kind"
KIND_RETRIEVER = "RETRIEVER"
KIND_RERANKER = "RERANKER"
KIND_LLM = "LLM"
KIND_CHAIN = "CHAIN"
KIND_AGENT = "AGENT"  # an agent step (ragpulse's @agent_step): a CHAIN-like parent of other steps
KIND_TOOL = "TOOL"  # a tool call (ragpulse's @tool)

INPUT_VALUE = "input.value"  # the question (root and retrieval spans), the prompt (LLM spans)
OUTPUT_VALUE = "output.value"  # the answer
# "application/json" when input.value / output.value is the JSON of a structured value (a chain's
# dict output, an LLM's generations): assembly then reads the text out of it.
INPUT_MIME_TYPE = "input.mime_type"
OUTPUT_MIME_TYPE = "output.mime_type"
MIME_JSON = "application/json"

# Documents are flattened: f"{prefix}{i}.document.{field}" for i = 0, 1, ...
RETRIEVAL_DOCUMENTS = "retrieval.documents."
RERANKER_OUTPUT_DOCUMENTS = "reranker.output_documents."
DOCUMENT_FIELDS = ("id", "content", "score", "metadata")
# ragpulse's addition beside them: the id the retriever gave when it repeated within one retrieval
# (document.id is then made unique: agent/chunks.unique_ids).
DOCUMENT_SOURCE = "source"

LLM_MODEL_NAME = "llm.model_name"
LLM_PROVIDER = "llm.provider"
LLM_TOKEN_COUNT_PROMPT = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION = "llm.token_count.completion"
# Chat messages are flattened too: f"{LLM_INPUT_MESSAGES}{i}.{MESSAGE_ROLE}" and so on.
LLM_INPUT_MESSAGES = "llm.input_messages."
LLM_OUTPUT_MESSAGES = "llm.output_messages."
MESSAGE_ROLE = "message.role"
MESSAGE_CONTENT = "message.content"
LLM_OUTPUT_MESSAGE_CONTENT = f"{LLM_OUTPUT_MESSAGES}0.{MESSAGE_CONTENT}"  # the first output message
# More fields of a flattened message: the tool that answered (role "tool": the call it answers),
# and an assistant message's tool calls, f"{message_key(prefix, i, MESSAGE_TOOL_CALLS)}{j}.{TOOL_CALL_ID}".
MESSAGE_NAME = "message.name"
MESSAGE_TOOL_CALL_ID = "message.tool_call_id"
MESSAGE_TOOL_CALLS = "message.tool_calls."
TOOL_CALL_ID = "tool_call.id"
TOOL_CALL_FUNCTION_NAME = "tool_call.function.name"
TOOL_CALL_FUNCTION_ARGUMENTS = "tool_call.function.arguments"  # a JSON string
# TOOL spans (the tool's own name and description) and AGENT spans.
TOOL_NAME = "tool.name"
TOOL_DESCRIPTION = "tool.description"
AGENT_NAME = "agent.name"

# -- OpenTelemetry GenAI / OpenLLMetry -------------------------------------------------------
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_PROVIDER = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_REQUEST_TOP_K = "gen_ai.request.top_k"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
# Semantic conventions 1.42: messages as JSON, [{"role", "parts": [{"type": "text", "content"},
# {"type": "tool_call", ...}, {"type": "tool_call_response", ...}]}]; system instructions as a
# JSON list of parts. Recorded as JSON strings on spans (the SDK has no structured values).
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
# Retrieval spans: a JSON array of {"id", "score", ...} (ragpulse adds "content" and "metadata"
# when it writes the documents only there, see docs/agent.md), the query, the data source.
GEN_AI_RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
GEN_AI_RETRIEVAL_QUERY = "gen_ai.retrieval.query.text"
GEN_AI_DATA_SOURCE_ID = "gen_ai.data_source.id"
# Deprecated flattened prompt/completion (older OpenLLMetry releases), still read:
# f"{GEN_AI_PROMPT}{i}.{GEN_AI_ROLE}" / ".{GEN_AI_CONTENT}", likewise GEN_AI_COMPLETION.
GEN_AI_PROMPT = "gen_ai.prompt."
GEN_AI_COMPLETION = "gen_ai.completion."
GEN_AI_ROLE = "role"
GEN_AI_CONTENT = "content"
GEN_AI_COMPLETION_CONTENT = f"{GEN_AI_COMPLETION}0.{GEN_AI_CONTENT}"  # the first completion
# The keys of one message in gen_ai.input.messages: {"role", "parts": [part, ...]}, a part being
# {"type": "text", "content"}, {"type": "tool_call", "id", "name", "arguments"} or
# {"type": "tool_call_response", "id", "response"}; roles system / user / assistant / tool.
GEN_AI_PARTS = "parts"
PART_TYPE = "type"
PART_TEXT = "text"
PART_TOOL_CALL = "tool_call"
PART_TOOL_CALL_RESPONSE = "tool_call_response"
PART_ID = "id"
PART_NAME = "name"
PART_ARGUMENTS = "arguments"
PART_RESPONSE = "response"
ROLE_SYSTEM = "system"
ROLE_USER = "user"
ROLE_ASSISTANT = "assistant"
ROLE_TOOL = "tool"
# Tool call spans ("execute_tool {gen_ai.tool.name}"): arguments and result as JSON text (a result
# that is a string stays the string).
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
TOOL_TYPE_FUNCTION = "function"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
# Agent spans ("invoke_agent {gen_ai.agent.name}").
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
# The conversation a call belongs to (OTel GenAI; OpenLLMetry's LangGraph root): read as session.id.
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"

OP_RETRIEVAL = "retrieval"
OP_CHAT = "chat"
OP_RERANK = "rerank"
OP_EXECUTE_TOOL = "execute_tool"
OP_INVOKE_AGENT = "invoke_agent"
# gen_ai.operation.name of a retrieval span (OpenLLMetry names its retrievers vector_db_retrieve).
RETRIEVAL_OPS = (OP_RETRIEVAL, "retrieve", "search", "vector_db_retrieve")
LLM_OPS = (OP_CHAT, "text_completion", "generate_content", "completion")  # ... of an LLM span
CHAIN_OPS = (OP_INVOKE_AGENT, "invoke_workflow")  # ... of a span around a whole call
TOOL_OPS = (OP_EXECUTE_TOOL,)  # ... of a tool call

# OpenLLMetry (Traceloop): workflow/task spans carry their input and output as JSON,
# {"inputs": ..., ...} / {"outputs": ..., ...}; a retrieval's output is {"documents": [...]}.
TRACELOOP_SPAN_KIND = "traceloop.span.kind"
TRACELOOP_WORKFLOW = "workflow"
TRACELOOP_ENTITY_INPUT = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT = "traceloop.entity.output"

# -- ragpulse --------------------------------------------------------------------------------
RAG_ROOT = "rag.root"  # True on the span of one answered question: the trace's root for assembly
RAG_CORPUS_VERSION = "rag.corpus.version"
RAG_RISK_LEVEL = "rag.risk_level"
RAG_QUERY_TYPE = "rag.query_type"
# The configuration that served the call (online comparison; a bounded label downstream), and the
# versions of its parts as f"{RAG_CONFIG}{part}" (free-form; CONFIG_FIELDS are the documented parts).
RAG_VARIANT = "rag.variant"
RAG_CONFIG = "rag.config."
CONFIG_FIELDS = ("corpus", "chunker", "embedding_model", "index", "reranker", "prompt", "generator")
# The application's id of the user request: a shadow call made for the same request carries the
# same id, which is how `ragpulse compare` pairs the two variants' answers.
RAG_REQUEST_ID = "rag.request.id"
RAG_FEEDBACK = "rag.feedback"
# A feedback span (name FEEDBACK_SPAN, its trace the answer's) and its attributes.
FEEDBACK_SPAN = RAG_FEEDBACK
FEEDBACK_KIND = "rag.feedback.kind"
FEEDBACK_VALUE = "rag.feedback.value"
FEEDBACK_LABEL = "rag.feedback.label"
FEEDBACK_COMMENT = "rag.feedback.comment"
FEEDBACK_SOURCE = "rag.feedback.source"
RAG_DOCUMENTS_COUNT = "rag.retrieval.documents.count"  # before the agent's max_chunks cut
RAG_CITATION_COUNT = "rag.citation.count"
RAG_STREAM = "rag.stream"
# Root span: how many earlier messages the application gave (before the agent's max_messages cut).
RAG_CONVERSATION_COUNT = "rag.conversation.messages.count"
# LLM span: the chunks the generation was given, in the order it was given them, as
# f"{GENERATION_DOCUMENTS}{i}.document.id" (document_key): the ids of the retrieval spans' documents,
# so the answer's [n] markers resolve against them (docs/agent.md "Citations").
GENERATION_DOCUMENTS = "rag.generation.documents."
RAG_STREAM_CLOSED_EARLY = "rag.stream.closed_early"
RAG_TRUNCATED = "rag.truncated"
RAG_TRUNCATED_FIELDS = "rag.truncated.fields"

# One event per citation on the root span, at the answer's end time.
CITATION_EVENT = "rag.citation"
CITATION_DOCUMENT_ID = "rag.citation.document.id"
CITATION_MARKER = "rag.citation.marker"
CITATION_START = "rag.citation.answer.start"  # character offsets into the answer
CITATION_END = "rag.citation.answer.end"

# -- general OpenTelemetry -------------------------------------------------------------------
SESSION_ID = "session.id"
USER_ID = "user.id"
HTTP_ROUTE = "http.route"
SERVICE_NAME = "service.name"  # a resource attribute
EXCEPTION_MESSAGE = "exception.message"


def config_key(part: str) -> str:
    """The root-span attribute key of one configuration part (``rag.config.reranker``)."""
    return f"{RAG_CONFIG}{part}"


def document_key(prefix: str, index: int, field: str) -> str:
    """The attribute key of one field of document ``index`` under ``prefix``."""
    return f"{prefix}{index}.document.{field}"


def message_key(prefix: str, index: int, field: str) -> str:
    """The attribute key of one field of flattened message ``index`` (``llm.input_messages.0.message.role``)."""
    return f"{prefix}{index}.{field}"


def tool_call_key(prefix: str, index: int, call: int, field: str) -> str:
    """The attribute key of one field of tool call ``call`` of flattened message ``index``."""
    return f"{prefix}{index}.{MESSAGE_TOOL_CALLS}{call}.{field}"
