"""Reading what the application returned: an LLM's output text and usage, any value as JSON text.

Duck typing over the shapes LLM clients return (OpenAI / litellm responses and stream chunks,
Anthropic messages, dicts of those shapes, plain strings), with no dependency on the clients.
Runs in the export thread. :func:`to_json` never raises: a value the encoder cannot take
(a cycle, an object whose ``__str__`` raises) becomes a short placeholder text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .values import safe_str

__all__ = ["get", "output_text", "usage_tokens", "joined_text", "to_json", "safe_str"]


def get(obj: Any, name: str) -> Any:
    """``obj[name]`` of a mapping, else ``obj.name``; None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def output_text(value: Any) -> str | None:
    """Text of an LLM return value: str, OpenAI/litellm/Anthropic-style responses, or dicts."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    choices = get(value, "choices")
    if isinstance(choices, (list, tuple)) and choices:
        first = choices[0]
        message = get(first, "message") or get(first, "delta")
        if message is not None:
            content = get(message, "content")
            if isinstance(content, str):
                return content
        text = get(first, "text")
        if isinstance(text, str):
            return text
    content = get(value, "content")
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):  # Anthropic: [TextBlock(text=...)]
        texts = [t for t in (get(block, "text") for block in content) if isinstance(t, str)]
        if texts:
            return "".join(texts)
    for name in ("text", "output_text", "answer", "delta"):
        text = get(value, name)
        if isinstance(text, str):
            return text
    return None


def joined_text(parts: Sequence[Any]) -> str:
    """The text of a stream: every part's text, in order."""
    return "".join(t for t in (output_text(p) for p in parts) if t)


def usage_tokens(value: Any) -> tuple[int | None, int | None]:
    """(input tokens, output tokens) from a response's usage object, or a usage object itself."""
    if value is None or isinstance(value, str):
        return None, None
    usage = get(value, "usage")
    usage = usage if usage is not None else value
    inp = get(usage, "input_tokens")
    if inp is None:
        inp = get(usage, "prompt_tokens")
    out = get(usage, "output_tokens")
    if out is None:
        out = get(usage, "completion_tokens")
    return (
        inp if isinstance(inp, int) and not isinstance(inp, bool) else None,
        out if isinstance(out, int) and not isinstance(out, bool) else None,
    )


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=safe_str, sort_keys=True)


def to_json(value: Any) -> str:
    """``value`` as JSON text (objects it cannot encode as their ``str``); never raises."""
    try:
        return _ENCODER.encode(value)
    except Exception:  # noqa: BLE001 - cycles, mixed-type keys, too deep: the value as one string
        return json.dumps(safe_str(value), ensure_ascii=False)
