"""Render the mixin's Prometheus rules (``rules/*.yaml``) from the objectives config.

Recording rules turn counters into per-(service, judge) error ratios of every
quality objective over every recorded window, the judged-trace volume the
alerts guard on, and each objective's error budget. Alerting rules are the
multi-window, multi-burn-rate alerts on those ratios, a week-over-week drop of
every score, pipeline health, and a variant whose unsupported-claim ratio is
worse than the rest of its service.

The objectives appear in exactly one place: the ``vector(<budget>)`` of each
``ragpulse:sli_error_budget`` rule in the :data:`BUDGET_GROUP` group. The burn
alerts compare the ratios against ``factor * ragpulse:sli_error_budget`` and
their descriptions query the recorded budget, so a deployment changes an
objective by replacing that one expression (the helm chart does this from its
``objectives`` values) and everything else stays the file in rules/.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..contract import SCORE_NAMES
from .common import QUALITY_BY, alert_annotations, budget_text, num, query_value
from .config import error_budget
from .pipeline_rules import pipeline_alerts
from .review_rules import review_alerts
from .variant_rules import variant_alerts
from .yamlout import dump_yaml

__all__ = [
    "RULE_FILES",
    "BUDGET",
    "BUDGET_GROUP",
    "render_rules",
    "rule_documents",
    "error_ratio",
    "judged_volume",
    "burn_threshold",
    "budget_queries",
]

#: The recorded error budget (1 - objective) of every quality objective, label ``objective``.
BUDGET = "ragpulse:sli_error_budget"

#: The recording group holding one :data:`BUDGET` rule per objective, and nothing else that
#: depends on the objectives.
BUDGET_GROUP = "ragpulse-sli-budgets"


def error_ratio(window: str) -> str:
    """Name of the recorded error ratio over ``window``."""
    return f"ragpulse:sli_error_ratio:rate{window}"


def judged_volume(window: str) -> str:
    """Name of the recorded count of successfully judged traces over ``window``."""
    return f"ragpulse:judged_traces:increase{window}"


def burn_threshold(objective: str, factor: float) -> str:
    """PromQL of the burn threshold ``factor`` x the recorded error budget of ``objective``."""
    return f'{num(factor)} * {BUDGET}{{objective="{objective}"}}'


def budget_queries(config: Mapping[str, Any]) -> dict[str, float]:
    """Query -> value of every budget query the burn alerts' descriptions make, for ``config``."""
    out = {}
    for name, obj in config["objectives"].items():
        out[f'{BUDGET}{{objective="{name}"}}'] = error_budget(obj)
        for bw in config["burn_windows"]:
            out[burn_threshold(name, bw["factor"])] = float(bw["factor"]) * error_budget(obj)
    return out


def _ranged(selector: str, window: str) -> str:
    return f"{selector}[{window}]"


def _recording(config: Mapping[str, Any]) -> dict[str, Any]:
    groups = []
    for w in config["record_windows"]:
        rules: list[dict[str, Any]] = []
        for name, obj in config["objectives"].items():
            total = f"sum by ({QUALITY_BY}) (rate({_ranged(obj['total'], w)}))"
            bad = f"sum by ({QUALITY_BY}) (rate({_ranged(obj['bad'], w)}))"
            # No bad events yet is a ratio of 0, not a missing series.
            expr = f"(\n  {bad}\n  or 0 * {total}\n)\n/\n{total}\n"
            rules.append({"record": error_ratio(w), "expr": expr, "labels": {"objective": name}})
        rules.append(
            {
                "record": judged_volume(w),
                "expr": f"sum by ({QUALITY_BY}) (increase(ragpulse_failure_modes_total[{w}]))",
            }
        )
        groups.append({"name": f"ragpulse-sli-{w}", "rules": rules})
    budgets = [
        {
            "record": BUDGET,
            "expr": f"vector({budget_text(error_budget(obj))})",
            "labels": {"objective": name},
        }
        for name, obj in config["objectives"].items()
    ]
    groups.append({"name": BUDGET_GROUP, "rules": budgets})
    return {"groups": groups}


def _burn_rule(
    config: Mapping[str, Any], name: str, obj: Mapping[str, Any], bw: Mapping[str, Any]
) -> dict[str, Any]:
    threshold = burn_threshold(name, bw["factor"])
    sel = f'{{objective="{name}"}}'
    expr = (
        f"(\n  {error_ratio(bw['long'])}{sel}\n    > on (objective) group_left () ({threshold})\n"
        f"  and\n  {error_ratio(bw['short'])}{sel}\n    > on (objective) group_left () ({threshold})\n)\n"
        f"and on ({QUALITY_BY})\n  {judged_volume(bw['long'])} >= {bw['min_judged']}\n"
    )
    title = obj["title"]
    summary = f"{title} of {{{{ $labels.service }}}} is burning its error budget {bw['factor']}x too fast"
    description = (
        f"{title} of service {{{{ $labels.service }}}} (judge {{{{ $labels.judge }}}}) is "
        f"{{{{ $value | humanizePercentage }}}} over the last {bw['long']} and above "
        f"{query_value(threshold)} ({bw['factor']}x the error budget) over the last {bw['short']}; "
        f"the objective allows {query_value(f'{BUDGET}{sel}')}. Counted as bad: {obj['description']}."
    )
    return {
        "alert": obj["alert"],
        "expr": expr,
        "for": bw["for"],
        "labels": {"severity": bw["severity"], "window": bw["long"]},
        "annotations": alert_annotations(config, obj["alert"], summary, description),
    }


def _slo_alerts(config: Mapping[str, Any]) -> dict[str, Any]:
    rules = [
        _burn_rule(config, name, obj, bw)
        for name, obj in config["objectives"].items()
        for bw in config["burn_windows"]
    ]
    return {"groups": [{"name": "ragpulse-slo-alerts", "rules": rules}]}


def _score_mean(score: str, window: str, offset: str = "") -> str:
    off = f" offset {offset}" if offset else ""
    return (
        f"sum by ({QUALITY_BY}) (rate(ragpulse_{score}_sum[{window}]{off}))\n"
        f"  / sum by ({QUALITY_BY}) (rate(ragpulse_{score}_count[{window}]{off}))"
    )


def _drift_alerts(config: Mapping[str, Any]) -> dict[str, Any]:
    sd = config["score_drop"]
    w, off, drop, n = sd["window"], sd["offset"], num(sd["min_drop"]), sd["min_judged"]
    rules = []
    for score in SCORE_NAMES:
        expr = (
            f"(\n  {_score_mean(score, w)}\n)\n<\n(\n  {_score_mean(score, w, off)}\n) - {drop}\n"
            f"and on ({QUALITY_BY}) sum by ({QUALITY_BY}) (increase(ragpulse_{score}_count[{w}])) >= {n}\n"
            f"and on ({QUALITY_BY}) sum by ({QUALITY_BY}) (increase(ragpulse_{score}_count[{w}] offset {off})) >= {n}\n"
        )
        label = score.replace("_", " ")
        summary = f"Mean {label} of {{{{ $labels.service }}}} dropped against the same hours last week"
        description = (
            f"Mean {label} of service {{{{ $labels.service }}}} (judge {{{{ $labels.judge }}}}) over the last {w} "
            f'is {{{{ $value | printf "%.3f" }}}}, more than {drop} below the same {w} one week ago '
            "(a slow drift that may stay inside the error budget)."
        )
        rules.append(
            {
                "alert": sd["alert"],
                "expr": expr,
                "for": sd["for"],
                "labels": {"severity": sd["severity"], "score": score},
                "annotations": alert_annotations(config, sd["alert"], summary, description),
            }
        )
    return {"groups": [{"name": "ragpulse-drift-alerts", "rules": rules}]}


#: Every rendered rule file, in load order, and the function that renders its document.
_RENDERERS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "ragpulse-recording.yaml": _recording,
    "ragpulse-slo-alerts.yaml": _slo_alerts,
    "ragpulse-drift-alerts.yaml": _drift_alerts,
    "ragpulse-pipeline-alerts.yaml": pipeline_alerts,
    "ragpulse-variant-alerts.yaml": variant_alerts,
    "ragpulse-review-alerts.yaml": review_alerts,
}

#: Rendered rule files, in load order.
RULE_FILES: tuple[str, ...] = tuple(_RENDERERS)


def rule_documents(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """File name -> rule document (``{"groups": [...]}``) of every file in :data:`RULE_FILES`."""
    return {name: render(config) for name, render in _RENDERERS.items()}


def render_rules(config: Mapping[str, Any]) -> dict[str, str]:
    """File name -> YAML text of every rule file in :data:`RULE_FILES`."""
    return {name: dump_yaml(doc) for name, doc in rule_documents(config).items()}
