"""The conversation before the current turn, read from what the application passed (export thread).

A history may be OpenAI-style message dicts (``role``, ``content`` as text or parts,
``tool_calls``, ``tool_call_id``), LangChain messages (duck-typed by ``.type`` / ``.content``,
``.tool_calls``, ``.tool_call_id``; LangChain itself is never imported), objects with
``.role`` / ``.content`` (LlamaIndex ``ChatMessage``, OpenAI SDK messages), ``(role, text)``
pairs, or bare strings (user messages). Each becomes the OpenTelemetry GenAI message shape,
``{"role", "parts": [...]}``; anything else in the list is skipped.

:func:`split_turns` separates the current user turn from the earlier ones: when the query
argument is itself the message list (``def chat(messages)``), the current turn is its last
user message; when the history ends with the current question, that message is left out.
Nothing here raises: an unreadable value becomes its ``str`` (or a placeholder).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .conventions import (
    GEN_AI_CONTENT,
    PART_ARGUMENTS,
    PART_ID,
    PART_NAME,
    PART_RESPONSE,
    PART_TEXT,
    PART_TOOL_CALL,
    PART_TOOL_CALL_RESPONSE,
    PART_TYPE,
    ROLE_ASSISTANT,
    ROLE_SYSTEM,
    ROLE_TOOL,
    ROLE_USER,
)
from .outputs import get, safe_str, to_json

__all__ = ["TEXT_FIELDS", "Message", "message_of", "messages_of", "split_turns", "is_message_list"]

# LangChain message types and other spellings -> the GenAI roles.
_ROLES = {
    "human": ROLE_USER,
    "user": ROLE_USER,
    "ai": ROLE_ASSISTANT,
    "assistant": ROLE_ASSISTANT,
    "model": ROLE_ASSISTANT,
    "system": ROLE_SYSTEM,
    "developer": ROLE_SYSTEM,
    "tool": ROLE_TOOL,
    "function": ROLE_TOOL,
}
_MAX_PARTS = 64  # parts read from one message's content list
# The field that holds a part's text, by part type: what is redacted and cut, and what
# OpenInference's flattened message content joins.
TEXT_FIELDS: dict[str, str] = {PART_TEXT: GEN_AI_CONTENT, PART_TOOL_CALL_RESPONSE: PART_RESPONSE}


class Message(NamedTuple):
    """One message in the GenAI shape: role, parts (``{"type": "text", "content"}``, ...), and
    the name a message may carry (a tool's name on a tool message)."""

    role: str
    parts: list[dict[str, Any]]
    name: str | None = None


def _role(value: Any) -> str | None:
    value = getattr(value, "value", value)  # an enum (LlamaIndex MessageRole)
    if not isinstance(value, str) or not value:
        return None
    lowered = value.lower()
    return _ROLES.get(lowered, lowered)


def _text(value: Any) -> str:
    """A content value as text: a string as it is, data as JSON, any other object as its ``str``."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (Mapping, list, tuple, int, float)):
        return to_json(value)
    return safe_str(value)


def _content_parts(content: Any) -> list[dict[str, Any]]:
    """Text parts of a message's content: a string, or a list of parts (text ones read, others
    kept by their type only: an image or file is not the conversation's text)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{PART_TYPE: PART_TEXT, GEN_AI_CONTENT: content}] if content else []
    if not isinstance(content, (list, tuple)):
        return [{PART_TYPE: PART_TEXT, GEN_AI_CONTENT: _text(content)}]
    parts: list[dict[str, Any]] = []
    for item in content[:_MAX_PARTS]:
        if isinstance(item, str):
            if item:
                parts.append({PART_TYPE: PART_TEXT, GEN_AI_CONTENT: item})
            continue
        kind = get(item, PART_TYPE)
        text = get(item, PART_TEXT)
        if text is None:
            text = get(item, "content")
        if isinstance(text, str) and kind in (None, PART_TEXT):
            parts.append({PART_TYPE: PART_TEXT, GEN_AI_CONTENT: text})
        elif isinstance(kind, str):
            parts.append({PART_TYPE: kind})
    return parts


def _arguments(value: Any) -> Any:
    """Tool call arguments as a JSON value: a JSON text is parsed, anything else kept."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _tool_call(call: Any) -> dict[str, Any] | None:
    """One tool call: OpenAI's ``{"id", "function": {"name", "arguments"}}`` or LangChain's
    ``{"id", "name", "args"}`` (dicts or objects)."""
    function = get(call, "function")
    source = function if function is not None else call
    name = get(source, "name")
    if name is None:
        return None
    args = get(source, "arguments")
    if args is None:
        args = get(call, "args")
    part: dict[str, Any] = {PART_TYPE: PART_TOOL_CALL, PART_NAME: safe_str(name)}
    call_id = get(call, "id")
    if call_id is not None:
        part[PART_ID] = safe_str(call_id)
    if args is not None:
        part[PART_ARGUMENTS] = _arguments(args)
    return part


def _fields(item: Any) -> tuple[Any, Any, Any, Any, Any]:
    """(role, content, tool calls, tool call id, name) of a mapping or an object."""
    if isinstance(item, Mapping):
        role = item.get("role") or item.get("type")
        return role, item.get("content"), item.get("tool_calls"), item.get("tool_call_id"), item.get("name")
    role = getattr(item, "role", None) or getattr(item, "type", None)
    return (
        role,
        getattr(item, "content", None),
        getattr(item, "tool_calls", None),
        getattr(item, "tool_call_id", None),
        getattr(item, "name", None),
    )


def message_of(item: Any) -> Message | None:
    """``item`` as a :class:`Message`, or None when it is not a message."""
    if isinstance(item, str):
        return Message(ROLE_USER, [{PART_TYPE: PART_TEXT, GEN_AI_CONTENT: item}])
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        role, content, calls, call_id, name = item[0], item[1], None, None, None
    else:
        role, content, calls, call_id, name = _fields(item)
    role = _role(role)
    if role is None:
        return None
    parts = _content_parts(content)
    if role == ROLE_TOOL:
        response = "".join(p.get(GEN_AI_CONTENT, "") for p in parts)
        part: dict[str, Any] = {PART_TYPE: PART_TOOL_CALL_RESPONSE, PART_RESPONSE: response}
        if call_id is not None:
            part[PART_ID] = safe_str(call_id)
        parts = [part]
    if isinstance(calls, (list, tuple)):
        parts.extend(p for p in map(_tool_call, calls[:_MAX_PARTS]) if p is not None)
    return Message(role, parts, name if isinstance(name, str) and name else None)


def messages_of(items: Sequence[Any]) -> list[Message]:
    """The messages among ``items``, in order."""
    return [m for m in map(message_of, items) if m is not None]


def is_message_list(value: Any) -> bool:
    """Whether ``value`` is a list of messages rather than a question (its last item a message)."""
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and not isinstance(value[-1], str)
        and (message_of(value[-1]) is not None)
    )


def message_text(message: Message) -> str:
    """The text of a message's text parts."""
    return "".join(p[GEN_AI_CONTENT] for p in message.parts if p.get(PART_TYPE) == PART_TEXT)


def split_turns(query: Any, history: Any, keep: int) -> tuple[Any, list[Message], int]:
    """(the current turn, the earlier messages (at most the last ``keep``), how many there were).

    ``query`` is the root's query value, ``history`` the conversation value (a list, or None).
    """
    if history is None and is_message_list(query):
        history, query = query, None
    if not isinstance(history, (list, tuple)) or not history:
        return query, [], 0
    window = history[-(keep + 1) :] if len(history) > keep + 1 else history
    messages = messages_of(window)
    if query is None:
        for i in range(len(messages) - 1, -1, -1):  # the current turn: the last user message
            if messages[i].role == ROLE_USER:
                query = message_text(messages[i])
                del messages[i:]
                break
    elif messages and messages[-1].role == ROLE_USER and isinstance(query, str):
        if message_text(messages[-1]).strip() == query.strip():  # the history ends with this turn
            messages.pop()
    count = len(history) - len(window) + len(messages)  # those before the window count as given
    return query, messages[-keep:], count
