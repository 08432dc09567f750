"""Tool calls and agent steps as span attributes (export thread).

A tool call (``@tool``) is written in both conventions: OTel GenAI's ``execute_tool`` span
(``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` and
``.result``) and OpenInference's ``TOOL`` span (``tool.name``, ``input.value``,
``output.value``). Arguments are the call's arguments by parameter name, as JSON; the
result is the returned string as it is, anything else as JSON (a stream: its parts joined
when they are strings, else their list). An agent step (``@agent_step``) is ``invoke_agent``
/ OpenInference ``AGENT`` with its input and output. Texts are redacted and cut like every
other text: arguments and an agent's input under ``max_query_chars``, results and outputs
under ``max_answer_chars``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .citations import answer_text
from .config import Limits
from .conventions import (
    AGENT_NAME,
    GEN_AI_AGENT_DESCRIPTION,
    GEN_AI_AGENT_ID,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_DESCRIPTION,
    GEN_AI_TOOL_NAME,
    GEN_AI_TOOL_TYPE,
    INPUT_MIME_TYPE,
    INPUT_VALUE,
    KIND_AGENT,
    KIND_TOOL,
    MIME_JSON,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    OUTPUT_MIME_TYPE,
    OUTPUT_VALUE,
    SPAN_KIND,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_TYPE_FUNCTION,
)
from .outputs import joined_text, output_text, safe_str, to_json
from .records import AgentRecord, ToolRecord

__all__ = ["Params", "bound_arguments", "tool_attributes", "agent_attributes"]

Scrub = Callable[[str, int, str], str]  # (text, limit, truncation flag) -> redacted, cut text


class Params:
    """Where a tool's arguments sit, from its signature (decoration time): the positional
    parameter names, the ``*args`` name, whether ``self``/``cls`` comes first, and the
    parameter that carries the tool call id (left out of the arguments)."""

    __slots__ = ("positional", "var_positional", "offset", "call_id")

    def __init__(
        self, positional: tuple[str, ...], var_positional: str | None, offset: int, call_id: str | None
    ):
        self.positional = positional
        self.var_positional = var_positional
        self.offset = offset
        self.call_id = call_id


def bound_arguments(args: tuple[Any, ...], kwargs: dict[str, Any] | None, params: Params | None) -> dict:
    """The call's arguments by parameter name (a signature that could not be read: ``args`` and the
    keywords)."""
    if params is None:
        out: dict[str, Any] = {"args": list(args)} if args else {}
        out.update(kwargs or {})
        return out
    out = {}
    extra: list[Any] = []
    for i, value in enumerate(args[params.offset :]):
        if i < len(params.positional):
            out[params.positional[i]] = value
        else:
            extra.append(value)
    if extra:
        out[params.var_positional or "args"] = extra
    for key, value in (kwargs or {}).items():
        out[key] = value
    out.pop(params.call_id, None)
    return out


def _text(value: Any) -> tuple[str, bool]:
    """(the text of a value, whether it is JSON)."""
    if isinstance(value, str):
        return value, False
    return to_json(value), True


def _result(rec: ToolRecord) -> Any:
    if rec.parts is None:
        return rec.result
    if all(isinstance(p, str) for p in rec.parts):
        return "".join(rec.parts)
    return list(rec.parts)


def tool_attributes(rec: ToolRecord, scrub: Scrub, limits: Limits, capture: bool) -> dict[str, Any]:
    """The attributes of a tool call span."""
    attrs: dict[str, Any] = {
        GEN_AI_TOOL_NAME: rec.name,
        TOOL_NAME: rec.name,
        GEN_AI_TOOL_TYPE: TOOL_TYPE_FUNCTION,
    }
    if rec.description:
        description = scrub(rec.description, limits.max_attribute_chars, "attribute")
        attrs[GEN_AI_TOOL_DESCRIPTION] = attrs[TOOL_DESCRIPTION] = description
    if rec.call_id is not None:
        attrs[GEN_AI_TOOL_CALL_ID] = scrub(safe_str(rec.call_id), limits.max_attribute_chars, "attribute")
    if capture:
        arguments = rec.input if rec.input is not None else bound_arguments(rec.args, rec.kwargs, rec.params)
        text, _ = _text(arguments)
        attrs[GEN_AI_TOOL_CALL_ARGUMENTS] = attrs[INPUT_VALUE] = scrub(
            text, limits.max_query_chars, "tool.arguments"
        )
        attrs[INPUT_MIME_TYPE] = MIME_JSON
        result = _result(rec)
        if result is not None:
            text, is_json = _text(result)
            attrs[GEN_AI_TOOL_CALL_RESULT] = attrs[OUTPUT_VALUE] = scrub(
                text, limits.max_answer_chars, "tool.result"
            )
            if is_json:
                attrs[OUTPUT_MIME_TYPE] = MIME_JSON
    attrs[GEN_AI_OPERATION] = OP_EXECUTE_TOOL
    attrs[SPAN_KIND] = KIND_TOOL
    return attrs


def _agent_output(rec: AgentRecord) -> Any:
    if rec.parts is not None:
        return joined_text(rec.parts)
    output = rec.output
    if output is None or isinstance(output, str):
        return output
    text = answer_text(output)
    return text if text is not None else (output_text(output) or output)


def agent_attributes(rec: AgentRecord, scrub: Scrub, limits: Limits, capture: bool) -> dict[str, Any]:
    """The attributes of an agent step span."""
    attrs: dict[str, Any] = {GEN_AI_AGENT_NAME: rec.name, AGENT_NAME: rec.name}
    if rec.agent_id is not None:
        attrs[GEN_AI_AGENT_ID] = scrub(safe_str(rec.agent_id), limits.max_attribute_chars, "attribute")
    if rec.description:
        attrs[GEN_AI_AGENT_DESCRIPTION] = scrub(rec.description, limits.max_attribute_chars, "attribute")
    if capture:
        if rec.input is not None:
            text, is_json = _text(rec.input)
            attrs[INPUT_VALUE] = scrub(text, limits.max_query_chars, "query")
            if is_json:
                attrs[INPUT_MIME_TYPE] = MIME_JSON
        output = _agent_output(rec)
        if output is not None:
            text, is_json = _text(output)
            attrs[OUTPUT_VALUE] = scrub(text, limits.max_answer_chars, "output")
            if is_json:
                attrs[OUTPUT_MIME_TYPE] = MIME_JSON
    attrs[GEN_AI_OPERATION] = OP_INVOKE_AGENT
    attrs[SPAN_KIND] = KIND_AGENT
    return attrs
