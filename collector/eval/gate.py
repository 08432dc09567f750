"""Regression gates: thresholds on eval aggregates that make ``ragpulse eval`` exit non-zero.

A gate file is YAML, a list of gates (or ``{"gates": [...]}``); each gate names
a ``metric``, optionally a ``slice`` (``overall``, the default; ``holdout``;
or ``FIELD=VALUE`` such as ``risk_level=high``), and one or more limits:

- ``minimum``: the slice's mean must be at least this;
- ``maximum``: the slice's mean must be at most this;
- ``max_regression``: against ``--baseline``, the end of the paired 95%
  interval on the metric's bad side may not pass this much regression
  (for a higher-is-better metric: ``ci_low >= -max_regression``). A gate of
  0.02 therefore passes only when the data rule out a loss of more than 0.02;
- ``min_n`` (default 1): fewer applicable cases than this fails the gate, so
  a gate over an empty slice never passes silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .files import EvalInputError
from .metrics import METRIC_BY_NAME

__all__ = ["Gate", "GateResult", "load_gates", "check_gates"]

_LIMITS = ("minimum", "maximum", "max_regression")


@dataclass(frozen=True)
class Gate:
    metric: str
    slice: str = "overall"
    minimum: float | None = None
    maximum: float | None = None
    max_regression: float | None = None
    min_n: int = 1


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    passed: bool
    message: str


def _gate(raw: Any, where: str) -> Gate:
    if not isinstance(raw, dict):
        raise EvalInputError(f"{where}: a gate must be a mapping")
    unknown = set(raw) - {"metric", "slice", "min_n", *_LIMITS}
    if unknown:
        raise EvalInputError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    metric = raw.get("metric")
    spec = METRIC_BY_NAME.get(metric) if isinstance(metric, str) else None
    if spec is None or spec.kind == "category":
        raise EvalInputError(f"{where}: unknown or non-numeric metric {metric!r}")
    if not any(raw.get(k) is not None for k in _LIMITS):
        raise EvalInputError(f"{where}: give minimum, maximum or max_regression")
    try:
        limits = {k: (None if raw.get(k) is None else float(raw[k])) for k in _LIMITS}
        min_n = int(raw.get("min_n", 1))
    except (TypeError, ValueError) as exc:
        raise EvalInputError(f"{where}: limits must be numbers") from exc
    sl = str(raw.get("slice") or "overall")
    if sl not in ("overall", "holdout") and "=" not in sl:
        raise EvalInputError(f"{where}: slice must be overall, holdout or FIELD=VALUE, got {sl!r}")
    return Gate(metric=metric, slice=sl, min_n=min_n, **limits)


def load_gates(path: str | Path) -> list[Gate]:
    """Parse and check a gate file (raises EvalInputError naming the gate)."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalInputError(f"cannot read {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise EvalInputError(f"{path}: not YAML ({exc})") from exc
    if isinstance(raw, dict):
        raw = raw.get("gates")
    if not isinstance(raw, list) or not raw:
        raise EvalInputError(f"{path}: expected a non-empty list of gates")
    return [_gate(g, f"{path}: gate {i}") for i, g in enumerate(raw, 1)]


def _section(doc: dict[str, Any], part: str, sl: str) -> dict[str, Any] | None:
    """The aggregate (part=None) or comparison block of a slice."""
    root = doc if part == "aggregate" else (doc.get("comparison") or {})
    if sl in ("overall", "holdout"):
        return root.get(sl)
    field, value = sl.split("=", 1)
    return (root.get("slices") or {}).get(field, {}).get(value)


def _check(gate: Gate, doc: dict[str, Any]) -> GateResult:
    label = f"{gate.metric} [{gate.slice}]"
    agg = _section(doc, "aggregate", gate.slice)
    summary = (agg or {}).get("metrics", {}).get(gate.metric) or {"n": 0, "mean": None}
    n, mean = summary["n"], summary.get("mean")
    if n < gate.min_n or mean is None:
        return GateResult(
            gate, False, f"{label}: {n} applicable case(s), the gate needs at least {gate.min_n}"
        )
    problems: list[str] = []
    if gate.minimum is not None and mean < gate.minimum:
        problems.append(f"mean {mean:.4f} < minimum {gate.minimum:g}")
    if gate.maximum is not None and mean > gate.maximum:
        problems.append(f"mean {mean:.4f} > maximum {gate.maximum:g}")
    if gate.max_regression is not None:
        problems.extend(_regression(gate, doc))
    if problems:
        return GateResult(gate, False, f"{label}: {'; '.join(problems)} (n={n})")
    return GateResult(gate, True, f"{label}: ok (mean {mean:.4f}, n={n})")


def _regression(gate: Gate, doc: dict[str, Any]) -> list[str]:
    if doc.get("comparison") is None:
        return ["max_regression needs --baseline"]
    comp = (_section(doc, "comparison", gate.slice) or {}).get(gate.metric) or {}
    ci = comp.get("ci")
    if ci is None:
        return [f"no paired interval ({comp.get('n', 0)} paired case(s))"]
    allowed = float(gate.max_regression or 0.0)
    if METRIC_BY_NAME[gate.metric].better == "lower":
        worst = ci[1]
        if worst > allowed:
            return [
                f"regression up to +{worst:.4f} not ruled out (95% CI [{ci[0]:.4f}, {ci[1]:.4f}]; allowed {allowed:g})"
            ]
    else:
        worst = ci[0]
        if worst < -allowed:
            return [
                f"regression down to {worst:.4f} not ruled out (95% CI [{ci[0]:.4f}, {ci[1]:.4f}]; allowed -{allowed:g})"
            ]
    return []


def check_gates(gates: list[Gate], doc: dict[str, Any]) -> list[GateResult]:
    """Each gate's result against an :func:`~.evaluate.evaluate` document."""
    return [_check(g, doc) for g in gates]
