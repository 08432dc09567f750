"""Parse untrusted JSON so that deep nesting is a clear refusal, never a crash.

``json.loads`` recurses once per nesting level and guards itself with the
interpreter's recursion limit, so a small document nested 100,000 deep raises
``RecursionError``, an exception no caller expects from a parser. Here it
becomes :class:`JsonTooDeep`, a ``ValueError`` saying what was wrong. The
decoders that walk the parsed document bound their own recursion
(:data:`MAX_VALUE_DEPTH` for nested OTLP ``AnyValue`` arrays and kvlists), so
no document that parses can make them recurse further. :func:`json_value`
reads the JSON that span attributes carry as text (documents, messages,
OpenLLMetry's wrapped inputs and outputs) the same way.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_VALUE_DEPTH", "JsonTooDeep", "loads_bounded", "json_value"]

# Levels of arrayValue/kvlistValue inside one attribute value; the OTel SDKs
# produce one (a list attribute), hand-built kvlists a few.
MAX_VALUE_DEPTH = 16


class JsonTooDeep(ValueError):
    """A JSON document nested deeper than the parser or a decoder accepts."""


def loads_bounded(data: bytes | str) -> Any:
    """``json.loads(data)``, raising :class:`JsonTooDeep` instead of ``RecursionError``.

    Invalid documents raise what ``json.loads`` raises (``ValueError``, and
    ``UnicodeDecodeError`` for bytes that are not valid UTF-8/16/32).
    """
    try:
        return json.loads(data)
    except RecursionError:
        raise JsonTooDeep(
            f"JSON nested too deeply (the parser stops at about {_parser_limit()} levels)"
        ) from None


def json_value(value: Any) -> Any:
    """A span attribute as JSON: the parsed document when ``value`` is text, a dict or list as it
    is, else None (text that is not JSON, or is nested too deeply, and other values)."""
    if isinstance(value, str):
        try:
            return loads_bounded(value)
        except ValueError:
            return None
    return value if isinstance(value, (dict, list)) else None


def _parser_limit() -> int:
    import sys

    return sys.getrecursionlimit()
