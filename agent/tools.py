"""Span kinds of agentic code: a tool call (``execute_tool``) and an agent step (``invoke_agent``).

Like the other specs (:mod:`.specs`), a spec here is a decorator and a with-statement form.
On the request path a tool call keeps references to its arguments tuple, its keywords and
its return value; an agent step its input argument and return value. Where the arguments
sit (parameter names, the call id parameter, the input parameter) is read once, at
decoration time. Everything else happens in the export thread (:mod:`.steps`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .conventions import OP_EXECUTE_TOOL, OP_INVOKE_AGENT
from .handles import AgentHandle, ToolHandle
from .records import AgentRecord, Record, ToolRecord
from .specs import QUERY_NAMES, Spec, arg_value, locate
from .steps import Params

__all__ = ["ToolSpec", "AgentStepSpec"]

_CALL_ID_NAMES = ("tool_call_id", "call_id")
_TASK_NAMES = (*QUERY_NAMES, "task", "messages")


def _description(fn: Callable[..., Any]) -> str | None:
    """The first paragraph of ``fn``'s docstring (what a model is told the tool does)."""
    doc = getattr(fn, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def _params(fn: Callable[..., Any], call_id: str | None) -> Params | None:
    import inspect  # decoration time only: keeps `import ragpulse.agent` light

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    offset = 1 if params and params[0].name in ("self", "cls") else 0
    positional = tuple(
        p.name for p in params[offset:] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )
    var = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    return Params(positional, var, offset, call_id)


def _span_name(operation: str, name: str) -> str:
    return f"{operation} {name}"


@dataclass(eq=False)
class _StepSpec(Spec):
    """A span named ``<operation> <step>`` (``execute_tool balance``, ``invoke_agent planner``):
    the step is the name given, else the decorated function's name, else ``step_default``."""

    operation = ""
    step_default = ""

    step_name: str = field(default="", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.step_name = self.name or ""
        if self.name:
            self.name = _span_name(self.operation, self.name)

    @property
    def step(self) -> str:
        """The step's name (the tool's, the agent's), ``step_default`` while it has none."""
        return self.step_name or self.step_default

    def bind(self, fn: Callable[..., Any]) -> None:
        self.step_name = self.step_name or getattr(fn, "__name__", None) or self.step_default
        self.name = _span_name(self.operation, self.step_name)


@dataclass(eq=False)
class ToolSpec(_StepSpec):
    """A tool call: arguments in, result out; ``gen_ai.tool.call.id`` from a ``tool_call_id``/``call_id``
    argument (or ``call_id=``)."""

    handle_cls = ToolHandle
    operation = OP_EXECUTE_TOOL
    step_default = "tool"
    default_name = _span_name(OP_EXECUTE_TOOL, step_default)

    description: str | None = None
    call_id: Any = None
    arguments: Any = None
    call_id_arg: str | None = None
    id_loc: Any = field(default=None, init=False)
    params: Params | None = field(default=None, init=False)

    def bind(self, fn: Callable[..., Any]) -> None:
        super().bind(fn)
        if self.description is None:
            self.description = _description(fn)
        self.id_loc = locate(fn, _CALL_ID_NAMES, self.call_id_arg, False)
        self.params = _params(fn, self.id_loc[1] if self.id_loc else None)

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record:
        call_id = arg_value(self.id_loc, args, kwargs) if self.id_loc is not None else self.call_id
        record = ToolRecord(self.step, self.description, call_id)
        record.args = args
        record.kwargs = kwargs
        record.params = self.params
        return self._static(record)

    def initial_record(self) -> Record | None:
        record = ToolRecord(self.step, self.description, self.call_id)
        record.input = self.arguments
        return self._static(record)


@dataclass(eq=False)
class AgentStepSpec(_StepSpec):
    """An agent step: its input (the task) in, its output out; a parent of the steps it takes."""

    handle_cls = AgentHandle
    operation = OP_INVOKE_AGENT
    step_default = "agent"
    default_name = _span_name(OP_INVOKE_AGENT, step_default)

    agent_id: Any = None
    description: str | None = None
    task: Any = None
    input_arg: str | None = None
    t_loc: Any = field(default=None, init=False)

    def bind(self, fn: Callable[..., Any]) -> None:
        super().bind(fn)
        if self.task is None:
            self.t_loc = locate(fn, _TASK_NAMES, self.input_arg, True)

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record:
        task = self.task if self.task is not None else arg_value(self.t_loc, args, kwargs)
        return self._static(AgentRecord(self.step, self.agent_id, self.description, task))

    def initial_record(self) -> Record | None:
        return self._static(AgentRecord(self.step, self.agent_id, self.description, self.task))
