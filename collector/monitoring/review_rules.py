"""The judge-human agreement alert (``rules/ragpulse-review-alerts.yaml``; its promtool cases are
:mod:`.review_rule_tests`).

``ragpulse review`` serves ``ragpulse_judge_human_agreement{service, judge}``:
over the latest claim labels reviewers gave (its ``--agreement-window``), the
share on which the judge's verdict, read as supported or not, equals the
reviewer's; ``ragpulse_judge_human_labels`` is how many labels that is.
``RagpulseJudgeHumanAgreementLow`` fires when the agreement stays below
``min_agreement`` with at least ``min_labels`` labels behind it: the judge's
scores, and every alert built on them, have drifted from what the team calls
supported (a domain the judge was not fit on, a changed prompt or model).
Several review servers over one store report the same figures; the rule takes
one per service and judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .common import QUALITY_BY, alert_annotations, num, pct
from .config import ObjectivesError, config_section

__all__ = ["AGREEMENT", "LABELS", "check_review_config", "review_alerts"]

AGREEMENT = "ragpulse_judge_human_agreement"
LABELS = "ragpulse_judge_human_labels"


def check_review_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``review_agreement`` section, checked (ObjectivesError names the problem)."""
    keys = ("alert", "severity", "min_agreement", "min_labels", "for")
    ra = config_section(config, "review_agreement", keys, durations=("for",))
    if not 0.0 < float(ra["min_agreement"]) <= 1.0:
        raise ObjectivesError("review_agreement.min_agreement must lie in (0, 1]")
    if int(ra["min_labels"]) < 1:
        raise ObjectivesError("review_agreement.min_labels must be at least 1")
    return ra


def review_alerts(config: Mapping[str, Any]) -> dict[str, Any]:
    """The rule document of the judge-human agreement alert."""
    ra = check_review_config(config)
    expr = (
        f"min by ({QUALITY_BY}) ({AGREEMENT}) < {num(ra['min_agreement'])}\n"
        f"and on ({QUALITY_BY}) max by ({QUALITY_BY}) ({LABELS}) >= {ra['min_labels']}\n"
    )
    summary = "Judge {{ $labels.judge }} disagrees with the reviewers of {{ $labels.service }}"
    description = (
        "Judge {{ $labels.judge }} agrees with the reviewers' claim labels of service {{ $labels.service }} "
        f"only {{{{ $value | humanizePercentage }}}} of the time (alert below {pct(ra['min_agreement'])}, at "
        f"least {ra['min_labels']} labels). Its scores no longer mean what the team means: run "
        "`ragpulse calibrate --from-reviews` and consider `ragpulse judge refit --from-reviews`."
    )
    rule = {
        "alert": ra["alert"],
        "expr": expr,
        "for": ra["for"],
        "labels": {"severity": ra["severity"]},
        "annotations": alert_annotations(config, ra["alert"], summary, description),
    }
    return {"groups": [{"name": "ragpulse-review-alerts", "rules": [rule]}]}
