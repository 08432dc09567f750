"""The query and the answer of a trace, from whichever instrumentation wrote its spans.

Root spans: ``input.value`` / ``output.value`` (ragpulse, OpenInference) or
OpenLLMetry's ``traceloop.entity.input`` / ``.output`` (``{"inputs": ...}`` /
``{"outputs": ...}``). A value that is a JSON object (a LangChain chain that
returns ``{"input", "context", "answer"}``) gives its text from the usual keys:
:data:`ANSWER_KEYS` for an answer, :data:`QUERY_KEYS` for a query; a message
state (LangGraph's ``{"messages": [...]}``) gives its last user message as the
query and its last assistant message as the answer. Retrieval
spans give the query (``input.value``, ``gen_ai.retrieval.query.text``,
OpenLLMetry's ``{"query": ...}``). LLM spans give the answer and, last, the
query: OpenInference's ``llm.output_messages`` / ``llm.input_messages``, the
GenAI conventions' ``gen_ai.output.messages`` / ``gen_ai.input.messages`` (JSON
messages with ``parts``), the deprecated ``gen_ai.completion.*`` /
``gen_ai.prompt.*``, then ``output.value``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ...agent.conventions import (
    GEN_AI_COMPLETION,
    GEN_AI_CONTENT,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_PARTS,
    GEN_AI_PROMPT,
    GEN_AI_RETRIEVAL_QUERY,
    GEN_AI_ROLE,
    INPUT_MIME_TYPE,
    INPUT_VALUE,
    LLM_INPUT_MESSAGES,
    LLM_OUTPUT_MESSAGES,
    MESSAGE_CONTENT,
    MESSAGE_ROLE,
    MIME_JSON,
    OUTPUT_MIME_TYPE,
    OUTPUT_VALUE,
    PART_RESPONSE,
    PART_TEXT,
    PART_TOOL_CALL_RESPONSE,
    PART_TYPE,
    ROLE_ASSISTANT,
    ROLE_USER,
    TRACELOOP_ENTITY_INPUT,
    TRACELOOP_ENTITY_OUTPUT,
)
from ..core.json_depth import json_value
from ..core.model import Span
from .framework_values import MESSAGES, turn_text

__all__ = [
    "ANSWER_KEYS",
    "QUERY_KEYS",
    "root_query",
    "root_answer",
    "retrieval_query",
    "llm_answer",
    "llm_query",
    "llm_messages",
    "flat_messages",
    "json_messages",
]

ANSWER_KEYS = ("answer", "output", "result", "response", "text", "content")
QUERY_KEYS = ("input", "question", "query")
_TRACELOOP_IN = ("inputs", "input", "query")
_TRACELOOP_OUT = ("outputs", "output")
_USER_ROLES = ("user", "human", "")
_TURN_ROLE = {QUERY_KEYS: ROLE_USER, ANSWER_KEYS: ROLE_ASSISTANT}  # what a message state gives


def _text(value: Any, keys: tuple[str, ...]) -> str:
    """Text of a plain or structured value: a string itself, else the first of ``keys`` that
    holds text (one level of nesting: ``{"outputs": {"answer": ...}}``), else from a message
    state ``{"messages": [...]}`` (LangGraph's) the last user message for a query, the last
    assistant message for an answer (:mod:`.framework_values`); '' when none does."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in keys:
            inner = value.get(key)
            if isinstance(inner, str) and inner:
                return inner
        for key in keys:
            inner = value.get(key)
            if isinstance(inner, dict):
                text = _text(inner, keys)
                if text:
                    return text
        if MESSAGES in value:  # an agent framework's state: the user's turn, or the answer
            return turn_text(value, _TURN_ROLE.get(keys, ROLE_ASSISTANT))
    return ""


def _value_text(attrs: dict[str, Any], key: str, mime_key: str, keys: tuple[str, ...], trusted: bool) -> str:
    """``attrs[key]`` as text: JSON objects (marked by the mime type, or any ``{...}`` when the
    span is not ragpulse's, ``trusted`` False) give the text under ``keys`` ('' when none)."""
    value = attrs.get(key)
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        return str(value)
    head = value[:1]
    if head in "{[" and (attrs.get(mime_key) == MIME_JSON or (not trusted and head == "{")):
        parsed = json_value(value)
        if isinstance(parsed, (dict, list)):
            return _text(parsed, keys)
    return value


def _traceloop(attrs: dict[str, Any], key: str, outer: tuple[str, ...], keys: tuple[str, ...]) -> str:
    wrapped = json_value(attrs.get(key))
    if not isinstance(wrapped, dict):
        return ""
    for name in outer:
        if name in wrapped:
            return _text(wrapped[name], keys)
    return ""


def root_query(attrs: dict[str, Any], trusted: bool) -> str:
    """The question from a root span (``trusted``: the span is ragpulse's own)."""
    return _value_text(attrs, INPUT_VALUE, INPUT_MIME_TYPE, QUERY_KEYS, trusted) or _traceloop(
        attrs, TRACELOOP_ENTITY_INPUT, _TRACELOOP_IN, QUERY_KEYS
    )


def root_answer(attrs: dict[str, Any], trusted: bool) -> str:
    """The answer from a root span; '' when it holds only a structure without answer text."""
    return _value_text(attrs, OUTPUT_VALUE, OUTPUT_MIME_TYPE, ANSWER_KEYS, trusted) or _traceloop(
        attrs, TRACELOOP_ENTITY_OUTPUT, _TRACELOOP_OUT, ANSWER_KEYS
    )


def retrieval_query(attrs: dict[str, Any]) -> str:
    """The query a retrieval span searched for."""
    query = attrs.get(GEN_AI_RETRIEVAL_QUERY)
    if isinstance(query, str) and query:
        return query
    return _value_text(attrs, INPUT_VALUE, INPUT_MIME_TYPE, QUERY_KEYS, False) or _traceloop(
        attrs, TRACELOOP_ENTITY_INPUT, ("query", *_TRACELOOP_IN), QUERY_KEYS
    )


def flat_messages(
    attrs: dict[str, Any], prefix: str, role_key: str, content_key: str
) -> list[tuple[str, str]]:
    """(role, content) of flattened messages ``f"{prefix}{i}.{role_key}"``, in index order."""
    msgs: dict[int, dict[str, str]] = {}
    plen = len(prefix)
    for key, value in attrs.items():
        if key.startswith(prefix):
            idx, _, field = key[plen:].partition(".")
            if idx.isdigit() and field in (role_key, content_key):
                msgs.setdefault(int(idx), {})[field] = str(value)
    return [(m.get(role_key, ""), m.get(content_key, "")) for _, m in sorted(msgs.items())]


def _part_text(part: Any) -> str:
    """The text of one GenAI message part: a text part's content, a tool response's response."""
    if not isinstance(part, dict):
        return ""
    kind = part.get(PART_TYPE)
    if kind == PART_TEXT:
        content = part.get(GEN_AI_CONTENT)
        return content if isinstance(content, str) else ""
    if kind == PART_TOOL_CALL_RESPONSE:
        response = part.get(PART_RESPONSE)
        if response is None:
            return ""
        return response if isinstance(response, str) else json.dumps(response, default=str)
    return ""


def json_messages(value: Any) -> list[tuple[str, str]]:
    """(role, text) of GenAI JSON messages: the text parts (and tool responses) of each message joined."""
    messages = json_value(value)
    if not isinstance(messages, list):
        return []
    out = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        parts = m.get(GEN_AI_PARTS)
        if isinstance(parts, list):
            text = "".join(_part_text(p) for p in parts)
        else:  # a message with plain "content", as some instrumentations write
            content = m.get(GEN_AI_CONTENT)
            text = content if isinstance(content, str) else ""
        out.append((str(m.get(GEN_AI_ROLE) or ""), text))
    return out


def _last_user(msgs: list[tuple[str, str]]) -> str:
    for role, content in reversed(msgs):
        if role in _USER_ROLES and content:
            return content
    return ""


def _last_text(msgs: list[tuple[str, str]]) -> str:
    for role, content in reversed(msgs):
        if content and role not in ("user", "system", "tool"):
            return content
    return ""


def _messages(
    attrs: dict[str, Any], flattened: str, genai_json: str, deprecated: str
) -> Iterator[list[tuple[str, str]]]:
    """One direction's messages of an LLM span in the order they are read, each form only once
    the one before gave nothing: OpenInference's flattened ``flattened.<i>.message.*``, the
    GenAI ``genai_json`` messages, the deprecated flattened ``deprecated.<i>.*``."""
    yield flat_messages(attrs, flattened, MESSAGE_ROLE, MESSAGE_CONTENT)
    if genai_json in attrs:
        yield json_messages(attrs[genai_json])
    yield flat_messages(attrs, deprecated, GEN_AI_ROLE, GEN_AI_CONTENT)


def llm_messages(span: Span) -> list[tuple[str, str]]:
    """(role, text) of the messages an LLM span was given, in the first form it has them."""
    for msgs in _messages(span.attrs, LLM_INPUT_MESSAGES, GEN_AI_INPUT_MESSAGES, GEN_AI_PROMPT):
        if msgs:
            return msgs
    return []


def llm_answer(span: Span) -> str:
    """The text an LLM span produced ('' when it produced none, e.g. only a tool call)."""
    a = span.attrs
    for msgs in _messages(a, LLM_OUTPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES, GEN_AI_COMPLETION):
        text = _last_text(msgs)
        if text:
            return text
    return _value_text(a, OUTPUT_VALUE, OUTPUT_MIME_TYPE, ANSWER_KEYS, False)


def llm_query(span: Span) -> str:
    """The last user message an LLM span was given."""
    for msgs in _messages(span.attrs, LLM_INPUT_MESSAGES, GEN_AI_INPUT_MESSAGES, GEN_AI_PROMPT):
        query = _last_user(msgs)
        if query:
            return query
    return ""
