"""Render the promtool unit tests of the mixin's alerts (``rules/tests/*.yaml``).

Each alert gets test groups in which it fires (with every expected label and
annotation), does not fire on healthy input, does not fire on too little
volume where it has a volume guard, and resolves after recovery. Inputs are
counter series shaped like the collector's, with thresholds taken from the
config, so the same cases hold for any objectives a team sets. The expected
annotations are expanded by :mod:`.templates` and checked by promtool against
Prometheus's own template engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..contract import SCORE_NAMES
from .config import duration_seconds, error_budget
from .pipeline_rule_tests import pipeline_cases
from .promtool_cases import JUDGE, SCRAPE, SERVICE, Case, Expect, counter, series
from .review_rule_tests import review_cases
from .rules import budget_queries
from .templates import expand
from .variant_rule_tests import variant_cases
from .yamlout import dump_yaml

__all__ = ["TEST_FILES", "render_rule_tests"]


def _find_rule(docs: Mapping[str, Any], alert: str, rule_labels: Mapping[str, str]) -> Mapping[str, Any]:
    for doc in docs.values():
        for group in doc["groups"]:
            for rule in group["rules"]:
                if rule.get("alert") == alert and dict(rule["labels"]) == dict(rule_labels):
                    return rule
    raise KeyError(f"no rule {alert} with labels {dict(rule_labels)}")


def _group(case: Case, docs: Mapping[str, Any], queries: Mapping[str, float]) -> dict[str, Any]:
    tests = []
    for eval_time, alert, expected in case.checks:
        exp = []
        for e in expected:
            rule = _find_rule(docs, alert, e.rule_labels)
            labels = {**e.labels, **e.rule_labels}
            notes = {k: expand(v, labels, e.value, queries) for k, v in rule["annotations"].items()}
            exp.append({"exp_labels": labels, "exp_annotations": notes})
        tests.append({"eval_time": eval_time, "alertname": alert, "exp_alerts": exp})
    return {
        "name": case.name,
        "interval": case.interval,
        "input_series": [{"series": s, "values": v} for s, v in case.series],
        "alert_rule_test": tests,
    }


def _test_file(
    rule_files: Sequence[str],
    interval: str,
    cases: Sequence[Case],
    docs: Mapping[str, Any],
    queries: Mapping[str, float],
) -> str:
    return dump_yaml(
        {
            "rule_files": [f"../{f}" for f in rule_files],
            "evaluation_interval": interval,
            "tests": [_group(c, docs, queries) for c in cases],
        }
    )


_Series = list[tuple[str, dict[str, str], str]]


def _split(metric: str, label: str, bad: str, good: str) -> _Series:
    """The bad and the good events of one counter, told apart by ``label``."""
    return [(metric, {label: bad}, "bad"), (metric, {label: good}, "good")]


_UNSUPPORTED_CLAIMS = _split("ragpulse_claims_total", "verdict", "unsupported", "supported")
_CITATIONS = "ragpulse_claim_citations_total"

#: Per objective, the input series of its events: (metric, labels, role); "bad" series rise by the
#: bad share, "good" by the rest, "outside" by all events (counted, but not part of this SLI).
#: A bad claim is also a claim, a false refusal also an abstention.
OBJECTIVE_SERIES: dict[str, _Series] = {
    "faithfulness": _UNSUPPORTED_CLAIMS,
    "citation_correctness": [
        *_split(_CITATIONS, "citation", "invalid", "valid"),
        (_CITATIONS, {"citation": "none"}, "outside"),
    ],
    "citation_completeness": _split(_CITATIONS, "citation", "none", "valid"),
    "false_refusal": [
        ("ragpulse_abstentions_total", {"kind": "false_refusal"}, "bad"),
        *_split("ragpulse_failure_modes_total", "mode", "abstain", "healthy"),
    ],
    "hallucination": [
        ("ragpulse_unsupported_claims_total", {"source": "hallucination"}, "bad"),
        *_UNSUPPORTED_CLAIMS,
    ],
    "retrieval_failure": _split("ragpulse_failure_modes_total", "mode", "retrieval", "healthy"),
    "generation_failure": _split("ragpulse_failure_modes_total", "mode", "generation", "healthy"),
}

QUALITY = {"service": SERVICE, "judge": JUDGE}


def _slo_series(
    objective: str, phases: Sequence[tuple[float, float, int]], step_min: float
) -> list[tuple[str, str]]:
    """Input series for ``phases`` of (bad share, events per minute, steps)."""
    spec = OBJECTIVE_SERIES[objective]
    out = []
    for metric, labels, role in spec:
        share = {"bad": lambda r: r, "good": lambda r: 1 - r, "outside": lambda r: 1.0}[role]
        segs = [(share(r) * n * step_min, k) for r, n, k in phases]
        out.append(
            (series(metric, {**labels, **QUALITY, **SCRAPE}), counter(*[(round(i, 6), k) for i, k in segs]))
        )
    if not any(m == "ragpulse_failure_modes_total" for m, _, _ in spec):
        volume = [(n * step_min, k) for _, n, k in phases]  # one judged trace per event
        out.append(
            (
                series("ragpulse_failure_modes_total", {"mode": "healthy", **QUALITY, **SCRAPE}),
                counter(*volume),
            )
        )
    return out


def _burn(name: str, bw: Mapping[str, Any], value: float) -> Expect:
    return Expect({"severity": bw["severity"], "window": bw["long"]}, {**QUALITY, "objective": name}, value)


def _shares(obj: Mapping[str, Any], windows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    b = error_budget(obj)
    t = {bw["name"]: b * float(bw["factor"]) for bw in windows}
    fast, slow, ticket = t["page-fast"], t["page-slow"], t["ticket"]
    # Three significant digits, not places: a budget of 1e-05 needs shares of 1e-04.
    return {
        "fast": _sig3((1 + fast) / 2),
        "slow": _sig3((slow + fast) / 2),
        "ticket": _sig3((ticket + slow) / 2),
        "healthy": _sig3(b / 2),
    }


def _sig3(x: float) -> float:
    return float(f"{x:.3g}")


_Checks = list[tuple[str, str, list[Expect]]]
_CaseSpec = tuple[str, list[tuple[float, float, int]], _Checks]


def _objective_cases(
    config: Mapping[str, Any], step_min: int, specs: Callable[[str, str, dict[str, float]], list[_CaseSpec]]
) -> list[Case]:
    """Per objective, a Case for each (title, phases, checks) that ``specs(objective, alert, shares)``
    gives, its series sampled every ``step_min`` minutes."""
    cases = []
    for name, obj in config["objectives"].items():
        alert = obj["alert"]
        for title, phases, checks in specs(name, alert, _shares(obj, config["burn_windows"])):
            cases.append(
                Case(f"{alert} {title}", f"{step_min}m", _slo_series(name, phases, step_min), checks)
            )
    return cases


def _page_cases(config: Mapping[str, Any]) -> list[Case]:
    """2-minute samples: two of them fit the 5m short window, and the cases need half the steps."""
    windows = {bw["name"]: bw for bw in config["burn_windows"]}
    fast_bw, slow_bw = windows["page-fast"], windows["page-slow"]
    # Recovery is checked once the slow page's short window, read from a recording one step old,
    # holds no bad event: with a small budget any bad event in it keeps the page firing.
    quiet = int(duration_seconds(slow_bw["short"]) // 120) + 2

    def specs(name: str, alert: str, s: dict[str, float]) -> list[_CaseSpec]:
        silent: _Checks = [("10m", alert, []), ("40m", alert, [])]
        return [
            ("fast burn pages", [(s["fast"], 1000, 6)], [("10m", alert, [_burn(name, fast_bw, s["fast"])])]),
            ("slow burn pages", [(s["slow"], 1000, 21)],
             [("10m", alert, []), ("40m", alert, [_burn(name, slow_bw, s["slow"])])]),
            ("healthy does not fire", [(s["healthy"], 1000, 21)], silent),
            ("volume guard: fast burn on few judged traces", [(s["fast"], 0.2, 21)], silent),
            ("resolves after recovery", [(s["fast"], 1000, 10), (0.0, 1000, quiet + 1)],
             [("10m", alert, [_burn(name, fast_bw, s["fast"])]), (f"{20 + 2 * quiet}m", alert, [])]),
        ]  # fmt: skip

    return _objective_cases(config, 2, specs)


def _ticket_cases(config: Mapping[str, Any]) -> list[Case]:
    """4-minute samples: alerts read recorded ratios, which must be younger than the 5m lookback.

    The recovery case leaks for 88 minutes and is checked once the whole history's ratio (the
    3d and 6h windows both still cover all of it) has fallen below the budget again.
    """
    ticket = next(bw for bw in config["burn_windows"] if bw["name"] == "ticket")

    def specs(name: str, alert: str, s: dict[str, float]) -> list[_CaseSpec]:
        return [
            ("slow leak opens a ticket", [(s["ticket"], 1000, 25)], [("80m", alert, [_burn(name, ticket, s["ticket"])])]),
            ("ticket: healthy does not fire", [(s["healthy"], 1000, 25)], [("80m", alert, [])]),
            ("ticket volume guard", [(s["ticket"], 0.1, 25)], [("80m", alert, [])]),
            ("ticket resolves after recovery", [(s["ticket"], 1000, 22), (0.0, 1000, 64)],
             [("80m", alert, [_burn(name, ticket, s["ticket"])]), ("340m", alert, [])]),
        ]  # fmt: skip

    return _objective_cases(config, 4, specs)


def _score_inputs(score: str, n: int, lower: float, phases: tuple[int, int, int]) -> list[tuple[str, str]]:
    """A score's _sum and _count rising by ``n`` scored traces a step: mean 0.9, then ``0.9 - lower``, then 0.9."""
    labels = {**QUALITY, **SCRAPE}
    before, during, after = phases
    mean = [(0.9 * n, before), ((0.9 - lower) * n, during), (0.9 * n, after)]
    return [
        (series(f"ragpulse_{score}_sum", labels), counter(*[(round(v, 6), k) for v, k in mean])),
        (series(f"ragpulse_{score}_count", labels), counter((n, before + during + after))),
    ]


def _drift_cases(config: Mapping[str, Any]) -> list[Case]:
    """Score means of 0.9 for a week, then a drop, then back to 0.9 (hourly samples)."""
    sd = config["score_drop"]
    step = 3600
    week = int(duration_seconds(sd["offset"]) // step)
    win = int(duration_seconds(sd["window"]) // step)
    drop_at = week + 4  # the same hours last week lie in the first week's mean
    fire_at, recover_at = drop_at + 2 * win, drop_at + 6 * win
    phases = (drop_at, 3 * win, recover_at + 2 - drop_at - 3 * win)
    per = max(30, 2 * int(sd["min_judged"]) // win + 1)
    few = max(1, int(sd["min_judged"]) // (2 * win))
    drop = round(float(sd["min_drop"]) * 2, 3)
    small = round(float(sd["min_drop"]) * 0.6, 3)
    alert = sd["alert"]

    def at(steps: int) -> str:
        return f"{steps * step // 3600}h"

    cases = []
    for score in SCORE_NAMES:
        fired = Expect({"severity": sd["severity"], "score": score}, QUALITY, round(0.9 - drop, 6))
        cases += [
            Case(f"{alert} {score} drop fires and resolves", "1h", _score_inputs(score, per, drop, phases),
                 [(at(fire_at), alert, [fired]), (at(recover_at), alert, [])]),
            Case(f"{alert} {score} small drop does not fire", "1h", _score_inputs(score, per, small, phases),
                 [(at(fire_at), alert, [])]),
            Case(f"{alert} {score} volume guard", "1h", _score_inputs(score, few, drop, phases),
                 [(at(fire_at), alert, [])]),
        ]  # fmt: skip
    return cases


#: Rendered test files -> (rule files they load, evaluation interval).
TEST_FILES: dict[str, tuple[tuple[str, ...], str]] = {
    "slo-page_test.yaml": (("ragpulse-recording.yaml", "ragpulse-slo-alerts.yaml"), "2m"),
    "slo-ticket_test.yaml": (("ragpulse-recording.yaml", "ragpulse-slo-alerts.yaml"), "4m"),
    "drift_test.yaml": (("ragpulse-drift-alerts.yaml",), "1h"),
    "pipeline_test.yaml": (("ragpulse-pipeline-alerts.yaml",), "1m"),
    "variant_test.yaml": (("ragpulse-variant-alerts.yaml",), "1m"),
    "review_test.yaml": (("ragpulse-review-alerts.yaml",), "1m"),
}


def render_rule_tests(config: Mapping[str, Any], docs: Mapping[str, Any]) -> dict[str, str]:
    """Test file name -> promtool test YAML, for the rule documents ``docs`` rendered from ``config``."""
    cases = {
        "slo-page_test.yaml": _page_cases(config),
        "slo-ticket_test.yaml": _ticket_cases(config),
        "drift_test.yaml": _drift_cases(config),
        "pipeline_test.yaml": pipeline_cases(config),
        "variant_test.yaml": variant_cases(config),
        "review_test.yaml": review_cases(config),
    }
    queries = budget_queries(config)
    return {
        name: _test_file(files, interval, cases[name], docs, queries)
        for name, (files, interval) in TEST_FILES.items()
    }
