"""The conversation before the user's turn, from whichever instrumentation wrote it.

ragpulse's agent writes the turns before the current one on the root span
(``gen_ai.input.messages``, the OTel GenAI JSON messages, and OpenInference's flattened
``llm.input_messages.<i>.message.*``); the current turn is the root's ``input.value``. Other
instrumentation puts a chat's history where it calls the model: when the root carries no
messages, the messages given to the generation that wrote the answer (either convention, or
the deprecated ``gen_ai.prompt.<i>.*``) are read instead, up to the last user message (the
current turn; what follows it is the model's own work on this turn: tool calls and their
results). System messages are the application's instructions, not turns, and are left out.
"""

from __future__ import annotations

from typing import Any

from ...agent.conventions import (
    GEN_AI_INPUT_MESSAGES,
    LLM_INPUT_MESSAGES,
    MESSAGE_CONTENT,
    MESSAGE_ROLE,
    ROLE_ASSISTANT,
    ROLE_SYSTEM,
    ROLE_USER,
    message_key,
)
from ..core.model import Message, Span
from .texts import flat_messages, json_messages, llm_answer, llm_messages

__all__ = [
    "ROOT_MESSAGE_KEYS",
    "root_conversation",
    "before_turn",
    "generation_conversation",
    "conversation_keys",
]

# Other names the chat conventions give the two sides of a conversation.
_ROLES = {"human": ROLE_USER, "ai": ROLE_ASSISTANT, "model": ROLE_ASSISTANT, "bot": ROLE_ASSISTANT}
_FIRST_FLAT = message_key(LLM_INPUT_MESSAGES, 0, MESSAGE_ROLE)
# A root carrying one of these keys carries a conversation (the check a caller may make first).
ROOT_MESSAGE_KEYS = (GEN_AI_INPUT_MESSAGES, _FIRST_FLAT)


def _messages(pairs: list[tuple[str, str]]) -> list[Message]:
    out = []
    for role, content in pairs:
        role = role.lower()
        role = _ROLES.get(role, role)
        if role != ROLE_SYSTEM:
            out.append(Message(role, content))
    return out


def root_conversation(attrs: dict[str, Any]) -> list[Message]:
    """The messages a root span carries, oldest first ([] when it carries none)."""
    if GEN_AI_INPUT_MESSAGES in attrs:
        msgs = _messages(json_messages(attrs[GEN_AI_INPUT_MESSAGES]))
        if msgs:
            return msgs
    if _FIRST_FLAT in attrs:
        return _messages(flat_messages(attrs, LLM_INPUT_MESSAGES, MESSAGE_ROLE, MESSAGE_CONTENT))
    return []


def before_turn(messages: list[Message], query: str, last_user_is_turn: bool) -> list[Message]:
    """``messages`` up to the current turn: the last user message that is the query, else (when
    ``last_user_is_turn``: the messages a generation was given) the last user message; all of
    them when neither is found (a root's history, which leaves the current turn out)."""
    target = query.strip()
    last_user = None
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == ROLE_USER:
            if last_user is None:
                last_user = i
            if target and messages[i].content.strip() == target:
                return messages[:i]
    return messages[:last_user] if last_user_is_turn and last_user is not None else messages


def generation_conversation(llms: list[Span], answer: str, query: str) -> list[Message]:
    """The turns before the current one as the generation that wrote ``answer`` was given them
    (the latest generation whose output is the answer, else the latest one)."""
    ordered = sorted(llms, key=lambda s: s.end, reverse=True)
    target = answer.strip()
    writer = ordered[0]
    if target:
        writer = next((s for s in ordered if llm_answer(s).strip() == target), writer)
    return before_turn(_messages(llm_messages(writer)), query, True)


def conversation_keys(attrs: dict[str, Any]) -> list[str]:
    """The root attributes that hold its conversation (stored in their own columns, so left
    out of the root's other attributes)."""
    keys = [GEN_AI_INPUT_MESSAGES] if GEN_AI_INPUT_MESSAGES in attrs else []
    if _FIRST_FLAT in attrs:
        keys.extend(k for k in attrs if k.startswith(LLM_INPUT_MESSAGES))
    return keys
