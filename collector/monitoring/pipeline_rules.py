"""Pipeline-health alerting rules: collector, ingest, judging, lag, dead letters and storage,
plus the users' own verdict: the share of calls that drew negative feedback.

Ratios and quantiles carry a minimum-volume guard (``min_judged``,
``min_received``); alerts on a level or a count (collector down, consumer lag,
dead letters, storage down, budget paused) use the level as their own guard.
The negative-feedback alert has no ``judge`` label (feedback is the users', not
a judge's) and carries a ``window`` label, so the Alertmanager receiver queues
that window's failing traces for the next export like a burn alert's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.feedback_spans import NEGATIVE_LABELS
from .common import alert_annotations, num, pct

__all__ = ["PIPELINE_ALERTS", "negative_feedback", "pipeline_alerts"]


def negative_feedback(selector: str = "") -> str:
    """The ``ragpulse_feedback_total`` series that count as negative feedback, with more matchers
    (``selector``): the collector's negative labels, matched in any case as the collector does;
    a thumbs-down given without a label is stored and counted with the label ``negative``."""
    extra = f"{selector}, " if selector else ""
    return f'ragpulse_feedback_total{{{extra}label=~"(?i){"|".join(NEGATIVE_LABELS)}"}}'


#: Config key under ``pipeline`` -> alert name.
PIPELINE_ALERTS: dict[str, str] = {
    "collector_down": "RagpulseCollectorDown",
    "no_traces": "RagpulseNoTracesReceived",
    "judging_stalled": "RagpulseJudgingStalled",
    "judge_errors": "RagpulseJudgeErrors",
    "judge_budget_paused": "RagpulseJudgeBudgetPaused",
    "consumer_lag": "RagpulseConsumerLagHigh",
    "pipeline_lag": "RagpulsePipelineLagHigh",
    "dead_letters": "RagpulseDeadLetters",
    "storage_down": "RagpulseStorageUnavailable",
    "negative_feedback": "RagpulseNegativeFeedbackHigh",
}


def _exprs(config: Mapping[str, Any]) -> dict[str, str]:
    """The PromQL of each pipeline alert."""
    p, up = config["pipeline"], f"up{{{config['collector_selector']}}}"
    nt, js, je = p["no_traces"], p["judging_stalled"], p["judge_errors"]
    pl, dl = p["pipeline_lag"], p["dead_letters"]
    bp, nf = p["judge_budget_paused"], p["negative_feedback"]
    return {
        "collector_down": f"{up} == 0\n",
        "no_traces": (
            f"sum by (service) (rate(ragpulse_traces_received_total[{nt['window']}])) == 0\n"
            f"or\n(count by (job) ({up} == 1) unless on (job) count by (job) (ragpulse_traces_received_total))\n"
        ),
        "judging_stalled": (
            f"sum by (service) (increase(ragpulse_traces_received_total[{js['window']}])) >= {js['min_received']}\n"
            f"unless on (service)\nsum by (service) (increase(ragpulse_traces_judged_total[{js['window']}])) > 0\n"
        ),
        "judge_errors": (
            f"(\n  sum by (service, judge) (rate(ragpulse_judge_errors_total[{je['window']}]))\n"
            f"  / sum by (service, judge) (rate(ragpulse_traces_judged_total[{je['window']}]))\n) > {num(je['max_ratio'])}\n"
            f"and on (service, judge)\nsum by (service, judge) (increase(ragpulse_traces_judged_total[{je['window']}])) >= {je['min_judged']}\n"
        ),
        "judge_budget_paused": (
            f"sum by (judge) (rate(ragpulse_judge_budget_paused_seconds_total[{bp['window']}])) > {num(bp['max_paused_share'])}\n"
        ),
        "consumer_lag": f"sum by (topic) (ragpulse_consumer_lag) > {p['consumer_lag']['max_records']}\n",
        "pipeline_lag": (
            f"histogram_quantile({num(pl['quantile'])}, sum by (service, le) (rate(ragpulse_pipeline_lag_seconds_bucket[{pl['window']}])))\n"
            f"  > {num(pl['max_seconds'])}\n"
            f"and on (service)\nsum by (service) (increase(ragpulse_pipeline_lag_seconds_count[{pl['window']}])) >= {pl['min_judged']}\n"
        ),
        "dead_letters": f"sum by (kind) (increase(ragpulse_deadlettered_total[{dl['window']}])) >= {dl['min_records']}\n",
        "storage_down": "ragpulse_storage_up == 0\n",
        "negative_feedback": (
            f"(\n  sum by (service) (rate({negative_feedback()}[{nf['window']}]))\n"
            f"  / sum by (service) (rate(ragpulse_traces_received_total[{nf['window']}]))\n) > {num(nf['max_ratio'])}\n"
            f"and on (service)\nsum by (service) (increase(ragpulse_traces_received_total[{nf['window']}])) >= {nf['min_received']}\n"
        ),
    }


def _texts(config: Mapping[str, Any]) -> dict[str, tuple[str, str, str]]:
    """Severity, summary and description of each pipeline alert."""
    p = config["pipeline"]
    nt, js, je = p["no_traces"], p["judging_stalled"], p["judge_errors"]
    pl, dl, bp, cl = p["pipeline_lag"], p["dead_letters"], p["judge_budget_paused"], p["consumer_lag"]
    nf = p["negative_feedback"]
    q = f"p{float(pl['quantile']) * 100:g}"
    return {
        "collector_down": (
            "critical",
            "ragpulse collector {{ $labels.instance }} is down",
            "Prometheus cannot scrape the ragpulse collector {{ $labels.instance }} (job {{ $labels.job }}); "
            "traces are neither stored nor judged while it is down.",
        ),
        "no_traces": (
            "warning",
            "ragpulse receives no traces{{ with $labels.service }} from {{ . }}{{ end }}",
            f"The collector is up but received no RAG traces{{{{ with $labels.service }}}} from service {{{{ . }}}}{{{{ end }}}} "
            f"in the last {nt['window']}: the application stopped sending, or its exporter cannot reach Kafka or the collector.",
        ),
        "judging_stalled": (
            "critical",
            "ragpulse judges none of the traces of {{ $labels.service }}",
            f"Service {{{{ $labels.service }}}} sent at least {js['min_received']} traces in the last {js['window']} "
            "but none was judged: the sampler or the judge workers are stalled.",
        ),
        "judge_errors": (
            "warning",
            "ragpulse judge {{ $labels.judge }} fails on {{ $labels.service }}",
            f"{{{{ $value | humanizePercentage }}}} of the judgments of service {{{{ $labels.service }}}} by judge "
            f"{{{{ $labels.judge }}}} failed in the last {je['window']} (objective: at most {pct(je['max_ratio'])}); "
            "failed judgments are recorded as errors, never as scores.",
        ),
        "judge_budget_paused": (
            "warning",
            "ragpulse judge {{ $labels.judge }} is paused by its cost budget",
            f"Judge {{{{ $labels.judge }}}} spent {{{{ $value | humanizePercentage }}}} of the last {bp['window']} waiting "
            f"for its cost budget (more than {pct(bp['max_paused_share'])}): the budget is exhausted and judging falls behind.",
        ),
        "consumer_lag": (
            "warning",
            "ragpulse consumers are {{ $value | humanize }} records behind on {{ $labels.topic }}",
            f"The collector's consumers of {{{{ $labels.topic }}}} are more than {cl['max_records']} records behind "
            "the end of the topic: ingest or judging cannot keep up.",
        ),
        "pipeline_lag": (
            "warning",
            "ragpulse pipeline lag of {{ $labels.service }} is above its objective",
            f"The {q} time from span end to stored judgment of service {{{{ $labels.service }}}} is "
            f"{{{{ $value | humanizeDuration }}}} over the last {pl['window']} (objective: {num(pl['max_seconds'])}s).",
        ),
        "dead_letters": (
            "warning",
            "ragpulse dead-lettered {{ $labels.kind }} records",
            f"Records of kind {{{{ $labels.kind }}}} went to the dead-letter topic in the last {dl['window']}; "
            "the reason is in each record's header.",
        ),
        "storage_down": (
            "critical",
            "ragpulse cannot write to ClickHouse from {{ $labels.instance }}",
            "The collector {{ $labels.instance }} could not complete its last storage operation and is retrying; "
            "nothing is committed or judged until ClickHouse answers again.",
        ),
        "negative_feedback": (
            "warning",
            "users of {{ $labels.service }} give unusually much negative feedback",
            f"Negative feedback (thumbs-down, escalations, re-asks, ...) arrived for {{{{ $value | humanizePercentage }}}} "
            f"of the traces service {{{{ $labels.service }}}} received in the last {nf['window']} "
            f"(objective: at most {pct(nf['max_ratio'])}).",
        ),
    }


def pipeline_alerts(config: Mapping[str, Any]) -> dict[str, Any]:
    """The pipeline-health rule group."""
    exprs, texts = _exprs(config), _texts(config)
    rules = []
    for key, alert in PIPELINE_ALERTS.items():
        severity, summary, description = texts[key]
        labels = {"severity": severity}
        if key == "negative_feedback":
            labels["window"] = config["pipeline"][key]["window"]
        rules.append(
            {
                "alert": alert,
                "expr": exprs[key],
                "for": config["pipeline"][key]["for"],
                "labels": labels,
                "annotations": alert_annotations(config, alert, summary, description),
            }
        )
    return {"groups": [{"name": "ragpulse-pipeline-alerts", "rules": rules}]}
