"""The conversation on the root span: ``gen_ai.input.messages`` and ``llm.input_messages.*`` (export thread).

Every text of every message (text parts, tool responses, tool call arguments) is redacted and
cut like any other text (``max_query_chars`` each, flag ``conversation.content``); then the
newest messages are kept while their texts fit ``max_conversation_chars`` (older ones dropped,
flag ``conversation``). Both conventions carry the same messages: the GenAI JSON (roles and
parts) and OpenInference's flattened form (role, content, tool calls). Under an application's
provider (``room`` set) the flattened form is left out when it would not fit the span's
attribute room, and the JSON is cut to whole messages under the provider's value length.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .config import Limits
from .conventions import (
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_PARTS,
    GEN_AI_ROLE,
    LLM_INPUT_MESSAGES,
    MESSAGE_CONTENT,
    MESSAGE_NAME,
    MESSAGE_ROLE,
    MESSAGE_TOOL_CALL_ID,
    PART_ARGUMENTS,
    PART_ID,
    PART_NAME,
    PART_TOOL_CALL,
    PART_TOOL_CALL_RESPONSE,
    PART_TYPE,
    RAG_CONVERSATION_COUNT,
    TOOL_CALL_FUNCTION_ARGUMENTS,
    TOOL_CALL_FUNCTION_NAME,
    TOOL_CALL_ID,
    message_key,
    tool_call_key,
)
from .conversation import TEXT_FIELDS, Message
from .outputs import to_json

__all__ = ["conversation_attributes", "scrubbed_json"]

Scrub = Callable[[str, int, str], str]  # (text, limit, truncation flag) -> redacted, cut text
_FLAG_CONTENT = "conversation.content"
_FLAG_DROPPED = "conversation"


def scrubbed_json(value: Any, scrub: Scrub, limit: int, flag: str) -> tuple[str, Any]:
    """(the JSON text of ``value`` redacted and cut, that JSON parsed again, or the text itself
    when the cut or a custom redactor left it unparseable)."""
    text = scrub(value if isinstance(value, str) else to_json(value), limit, flag)
    try:
        return text, json.loads(text)
    except ValueError:
        return text, text


def _scrubbed(message: Message, scrub: Scrub, limit: int) -> tuple[dict[str, Any], int]:
    """The message as written (every text redacted and cut) and how many characters its texts hold."""
    size = 0
    parts = []
    for part in message.parts:
        kind = part.get(PART_TYPE)
        out = dict(part)
        text_field = TEXT_FIELDS.get(kind)
        if text_field is not None:
            out[text_field] = scrub(part[text_field], limit, _FLAG_CONTENT)
            size += len(out[text_field])
        elif kind == PART_TOOL_CALL and PART_ARGUMENTS in part:
            text, out[PART_ARGUMENTS] = scrubbed_json(part[PART_ARGUMENTS], scrub, limit, _FLAG_CONTENT)
            size += len(text)
        parts.append(out)
    written: dict[str, Any] = {GEN_AI_ROLE: message.role, GEN_AI_PARTS: parts}
    if message.name:
        written[PART_NAME] = scrub(message.name, limit, _FLAG_CONTENT)
    return written, size


def _kept(
    messages: list[Message], count: int, scrub: Scrub, limits: Limits, truncated: list[str]
) -> list[dict]:
    """The newest messages whose texts fit ``max_conversation_chars`` (at least the newest one);
    flagged when fewer than the ``count`` given are kept."""
    kept: list[dict[str, Any]] = []
    total = 0
    for message in reversed(messages):
        written, size = _scrubbed(message, scrub, limits.max_query_chars)
        if kept and total + size > limits.max_conversation_chars:
            break
        kept.append(written)
        total += size
    if len(kept) < count and _FLAG_DROPPED not in truncated:
        truncated.append(_FLAG_DROPPED)
    kept.reverse()
    return kept


def _fitted(kept: list[dict[str, Any]], max_len: int | None, truncated: list[str]) -> str:
    """The messages as JSON, oldest dropped until it fits ``max_len`` (a cut JSON would not parse)."""
    text = to_json(kept)
    while max_len is not None and len(text) > max_len and kept:
        kept.pop(0)
        text = to_json(kept)
        if _FLAG_DROPPED not in truncated:
            truncated.append(_FLAG_DROPPED)
    return text


def _flattened(kept: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference's ``llm.input_messages.<i>.message.*`` of the messages."""
    out: dict[str, Any] = {}
    prefix = LLM_INPUT_MESSAGES
    for i, message in enumerate(kept):
        out[message_key(prefix, i, MESSAGE_ROLE)] = message[GEN_AI_ROLE]
        if PART_NAME in message:
            out[message_key(prefix, i, MESSAGE_NAME)] = message[PART_NAME]
        texts = []
        calls = 0
        for part in message[GEN_AI_PARTS]:
            kind = part.get(PART_TYPE)
            text_field = TEXT_FIELDS.get(kind)
            if text_field is not None:
                texts.append(part[text_field])
            if kind == PART_TOOL_CALL_RESPONSE and PART_ID in part:
                out[message_key(prefix, i, MESSAGE_TOOL_CALL_ID)] = part[PART_ID]
            elif kind == PART_TOOL_CALL:
                out[tool_call_key(prefix, i, calls, TOOL_CALL_FUNCTION_NAME)] = part[PART_NAME]
                if PART_ID in part:
                    out[tool_call_key(prefix, i, calls, TOOL_CALL_ID)] = part[PART_ID]
                if PART_ARGUMENTS in part:
                    args = part[PART_ARGUMENTS]
                    out[tool_call_key(prefix, i, calls, TOOL_CALL_FUNCTION_ARGUMENTS)] = (
                        args if isinstance(args, str) else to_json(args)
                    )
                calls += 1
        if texts:
            out[message_key(prefix, i, MESSAGE_CONTENT)] = "".join(texts)
    return out


def conversation_attributes(
    messages: list[Message],
    count: int,
    scrub: Scrub,
    limits: Limits,
    truncated: list[str],
    capture: bool = True,
    room: int | None = None,
    max_len: int | None = None,
) -> dict[str, Any]:
    """The root's conversation attributes for ``messages`` (oldest first; ``count`` as given).

    ``scrub`` redacts and cuts one text, appending its flag to ``truncated`` when it cuts;
    ``capture=False`` writes the count only. ``room`` / ``max_len``: the attributes the span can
    still take and the longest value kept (the application's provider), or None.
    """
    if not count:
        return {}
    attrs: dict[str, Any] = {RAG_CONVERSATION_COUNT: count}
    if not capture or not messages:
        return attrs
    kept = _kept(messages, count, scrub, limits, truncated)
    attrs[GEN_AI_INPUT_MESSAGES] = _fitted(kept, max_len, truncated)
    flat = _flattened(kept)
    if room is None or len(flat) <= room:
        attrs.update(flat)
    return attrs
