"""Values that agent frameworks' instrumentation serializes into span attributes.

LangGraph's state is ``{"messages": [...]}``: a graph's input holds the user's turn (and, without
a checkpointer, the turns before it), its output every message of the conversation so far.
OpenInference's LangChain instrumentor writes each message as ``{"type": "human", "data":
{"content": ...}}``, OpenLLMetry's as LangChain's own serialization ``{"lc": 1, "type":
"constructor", "id": [..., "HumanMessage"], "kwargs": {"content": ...}}``; an application may
also give ``{"role": "user", "content": ...}`` dicts, ``("user", text)`` pairs or plain strings
(a user message). A message's content is text or a list of content blocks (``{"type": "text",
"text": ...}``). :func:`turn_text` reads the user's turn or the answer from such a state.

A LangChain tool's result reaches its span as the serialized ``ToolMessage`` the tool node
made: :func:`tool_message` gives its content (the tool's own result) and the call id the model
gave. OpenLLMetry writes a tool's input as ``{"input_str": <the call's arguments>, "tags": ...,
"metadata": ...}``: :func:`tool_arguments` gives the arguments.
"""

from __future__ import annotations

import json
from typing import Any

from ...agent.conventions import ROLE_ASSISTANT, ROLE_SYSTEM, ROLE_TOOL, ROLE_USER
from ..core.json_depth import json_value

__all__ = ["MESSAGES", "message_list", "turn_text", "tool_message", "tool_arguments"]

MESSAGES = "messages"  # the state key of LangGraph's MessagesState (and of chat inputs)
# LangChain's message types and class names -> the conventions' roles.
_ROLES = {
    "human": ROLE_USER, "user": ROLE_USER, "humanmessage": ROLE_USER, "humanmessagechunk": ROLE_USER,
    "ai": ROLE_ASSISTANT, "assistant": ROLE_ASSISTANT, "aimessage": ROLE_ASSISTANT,
    "aimessagechunk": ROLE_ASSISTANT, "system": ROLE_SYSTEM, "systemmessage": ROLE_SYSTEM,
    "tool": ROLE_TOOL, "toolmessage": ROLE_TOOL, "function": ROLE_TOOL,
}  # fmt: skip
_TOOL_MESSAGE = "ToolMessage"
_INPUT_STR = "input_str"
_CALL_ID_FIELD = '"tool_call_id"'  # in every serialized ToolMessage


def _content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a list joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def _fields(message: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(role name as written, the dict holding content) of one serialized message, else None."""
    if message.get("lc") == 1 and isinstance(message.get("kwargs"), dict):  # LangChain's dumpd
        kwargs = message["kwargs"]
        ident = message.get("id")
        name = kwargs.get("type") or (ident[-1] if isinstance(ident, list) and ident else "")
        return str(name), kwargs
    data = message.get("data")
    if isinstance(data, dict) and "content" in data:  # OpenInference's {"type", "data"}
        return str(message.get("type") or data.get("type") or ""), data
    if "content" in message:  # {"role", "content"}, as chat APIs take them
        return str(message.get("role") or message.get("type") or ""), message
    return None


def _message(item: Any) -> tuple[str, str] | None:
    """(role, text) of one message in any of the module docstring's forms, else None."""
    if isinstance(item, str):
        return ROLE_USER, item
    if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], str):
        role = _ROLES.get(item[0].lower())
        return (role, _content_text(item[1])) if role else None
    if not isinstance(item, dict):
        return None
    fields = _fields(item)
    if fields is None:
        return None
    role = _ROLES.get(fields[0].lower())
    return (role, _content_text(fields[1].get("content"))) if role else None


def message_list(value: Any) -> list[tuple[str, str]] | None:
    """(role, text) of each message of a parsed ``{"messages": [...]}`` state; None when
    ``value`` is no such state or holds no message this module reads."""
    if not isinstance(value, dict):
        return None
    items = value.get(MESSAGES)
    if not isinstance(items, list):
        return None
    out = [m for item in items if (m := _message(item)) is not None]
    return out or None


def turn_text(value: Any, role: str) -> str:
    """The last message of ``role`` with text in a ``{"messages": [...]}`` state ('' when none):
    the user's turn of a graph's input (``role`` user), the answer of its output (assistant)."""
    messages = message_list(value)
    if messages:
        for r, text in reversed(messages):
            if r == role and text:
                return text
    return ""


def _tool_fields(value: Any) -> dict[str, Any] | None:
    """The fields of a serialized ToolMessage (OpenLLMetry wraps it as ``{"output": ...}``)."""
    if isinstance(value, dict) and "output" in value and "lc" not in value:
        value = value["output"]
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        ident = value.get("id")
        if isinstance(ident, list) and ident and ident[-1] == _TOOL_MESSAGE:
            return value["kwargs"]
        return None
    data = value.get("data")
    if value.get("type") == ROLE_TOOL and isinstance(data, dict) and "tool_call_id" in data:
        return data
    return None


def tool_message(result: str) -> tuple[str, str] | None:
    """(content, call id) of a tool result that is a serialized LangChain ``ToolMessage``;
    None for any other result (kept as it is). Content that is not text is written as JSON."""
    if not result.startswith("{") or _CALL_ID_FIELD not in result:  # the common case: not parsed
        return None
    fields = _tool_fields(json_value(result))
    if fields is None:
        return None
    content = fields.get("content")
    text = _content_text(content) if isinstance(content, str | list) else ""
    if not text and content not in (None, "", []):
        text = json.dumps(content, default=str)
    call_id = fields.get("tool_call_id")
    return text, call_id if isinstance(call_id, str) else ""


def tool_arguments(arguments: str) -> str:
    """A tool call's arguments: OpenLLMetry's ``input_str`` out of its wrapper, else as given."""
    if not arguments.startswith("{") or _INPUT_STR not in arguments:
        return arguments
    wrapped = json_value(arguments)
    if isinstance(wrapped, dict) and isinstance(wrapped.get(_INPUT_STR), str):
        return wrapped[_INPUT_STR]
    return arguments
