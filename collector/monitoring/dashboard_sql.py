"""The ClickHouse dashboards: *Trace drill-down* and *Judge health* (grafana-clickhouse-datasource).

Queries use the plugin's macros (``$__timeFilter``, ``$__timeInterval``,
``$__conditionalAll``) and dashboard variables; tables are read with FINAL
because they are ReplacingMergeTrees (replays stay single-counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..contract import FAILURE_MODES
from .dashboard_sessions import SESSIONS_FLAGGED
from .grafana import (
    CH,
    CH_PLUGIN,
    Layout,
    constant_var,
    custom_var,
    dashboard,
    datasource_var,
    panel,
    prom_target,
    query_var,
    sql_target,
    textbox_var,
)

__all__ = ["drilldown", "judge_health", "DRILLDOWN_UID", "JUDGE_HEALTH_UID"]

DRILLDOWN_UID = "ragpulse-drilldown"
JUDGE_HEALTH_UID = "ragpulse-judge-health"

_J = "${database}.rag_judgments"
_T = "${database}.rag_traces"
_C = "${database}.rag_claims"
_SJ = "service = '${service}' AND judge_id = '${judge}'"

WORST = f"""SELECT j.trace_id AS trace_id, j.time AS time, t.query AS query, t.answer AS answer,
  j.failure_mode AS failure_mode, j.faithfulness AS faithfulness,
  j.claims_unsupported + j.claims_contradicted AS unsupported_claims,
  c.unsupported AS unsupported_claim_texts, c.invalid_citations AS invalid_citations
FROM (
  SELECT * FROM {_J} FINAL
  WHERE {_SJ} AND error = '' AND $__timeFilter(time)
    AND $__conditionalAll(failure_mode IN (${{failure_mode:singlequote}}), $failure_mode)
    AND (failure_mode != 'healthy' OR abstention_kind = 'false_refusal' OR ifNull(citation_correctness, 1) < 1)
) AS j
LEFT JOIN (SELECT trace_id, query, answer FROM {_T} FINAL WHERE service = '${{service}}' AND $__timeFilter(time)) AS t
  ON t.trace_id = j.trace_id
LEFT JOIN (
  SELECT trace_id, arrayStringConcat(groupArrayIf(text, verdict != 'supported'), ' | ') AS unsupported,
    countIf(citation_valid = 0) AS invalid_citations
  FROM {_C} FINAL WHERE {_SJ} AND $__timeFilter(time) GROUP BY trace_id
) AS c ON c.trace_id = j.trace_id
ORDER BY ifNull(j.faithfulness, 2) ASC, unsupported_claims DESC, j.time DESC
LIMIT 50"""

MODES_OVER_TIME = f"""SELECT $__timeInterval(time) AS t, failure_mode, count() AS traces
FROM {_J} FINAL
WHERE {_SJ} AND error = '' AND $__timeFilter(time)
GROUP BY t, failure_mode ORDER BY t, failure_mode"""

TRACE = f"""SELECT t.trace_id AS trace_id, t.time AS time, t.query AS query, t.answer AS answer,
  j.failure_mode AS failure_mode, j.faithfulness AS faithfulness, j.citation_correctness AS citation_correctness
FROM (SELECT * FROM {_T} FINAL WHERE trace_id = '${{trace_id}}') AS t
LEFT JOIN (SELECT * FROM {_J} FINAL WHERE trace_id = '${{trace_id}}' AND judge_id = '${{judge}}') AS j
  ON j.trace_id = t.trace_id"""

CHUNKS = f"""SELECT ch.position AS position, ch.chunk_id AS chunk_id, any(ch.score) AS score, any(ch.content) AS content,
  countIf(has(cl.supporting_chunk_ids, ch.chunk_id)) AS claims_supported,
  countIf(has(cl.cited_chunk_ids, ch.chunk_id)) AS cited_by_claims,
  countIf(has(cl.cited_chunk_ids, ch.chunk_id) AND cl.citation_valid = 0) AS invalid_citations
FROM (
  SELECT trace_id, position, chunk_id, score, content FROM {_T} FINAL
  ARRAY JOIN arrayEnumerate(chunk_ids) AS position, chunk_ids AS chunk_id, chunk_scores AS score, chunk_contents AS content
  WHERE trace_id = '${{trace_id}}'
) AS ch
LEFT JOIN (
  SELECT trace_id, supporting_chunk_ids, cited_chunk_ids, citation_valid FROM {_C} FINAL
  WHERE trace_id = '${{trace_id}}' AND judge_id = '${{judge}}'
) AS cl ON cl.trace_id = ch.trace_id
GROUP BY position, chunk_id ORDER BY position"""

CLAIMS = f"""SELECT claim_index, text, verdict, supporting_chunk_ids, cited_chunk_ids, citation_valid, unsupported_source
FROM {_C} FINAL WHERE trace_id = '${{trace_id}}' AND judge_id = '${{judge}}' ORDER BY claim_index"""

JUDGE_PAIRS = f"""SELECT a.judge_id AS judge_a, b.judge_id AS judge_b, count() AS traces_both_judged,
  avg(a.failure_mode = b.failure_mode) AS failure_mode_agreement,
  countIf(a.failure_mode = 'healthy' AND b.failure_mode != 'healthy') AS a_healthy_b_failing,
  countIf(a.failure_mode != 'healthy' AND b.failure_mode = 'healthy') AS a_failing_b_healthy,
  avg(abs(ifNull(a.faithfulness, 0) - ifNull(b.faithfulness, 0))) AS mean_faithfulness_gap
FROM (SELECT * FROM {_J} FINAL WHERE service = '${{service}}' AND error = '' AND $__timeFilter(time)) AS a
INNER JOIN (SELECT * FROM {_J} FINAL WHERE service = '${{service}}' AND error = '' AND $__timeFilter(time)) AS b
  ON a.trace_id = b.trace_id
WHERE a.judge_id < b.judge_id
GROUP BY judge_a, judge_b ORDER BY traces_both_judged DESC"""

_LOCAL_MODE = "JSONExtractString(extra, 'local_failure_mode')"
_ESCALATION = "JSONExtractString(extra, 'escalation')"

TIER_FLIPS = f"""SELECT $__timeInterval(time) AS t,
  countIf({_ESCALATION} != '') / count() AS escalation_rate,
  countIf({_LOCAL_MODE} != '' AND {_LOCAL_MODE} = failure_mode) / greatest(countIf({_LOCAL_MODE} != ''), 1) AS tier_agreement,
  countIf({_LOCAL_MODE} != '' AND {_LOCAL_MODE} != failure_mode) AS local_vs_llm_flips
FROM {_J} FINAL
WHERE service = '${{service}}' AND error = '' AND $__timeFilter(time)
GROUP BY t ORDER BY t"""

ESCALATION_REASONS = f"""SELECT if({_ESCALATION} = '', 'not escalated', {_ESCALATION}) AS reason, count() AS judgments
FROM {_J} FINAL WHERE service = '${{service}}' AND $__timeFilter(time)
GROUP BY reason ORDER BY judgments DESC"""

JUDGE_VERSIONS = f"""SELECT $__timeInterval(judged_at) AS t, judge_id, count() AS judgments
FROM {_J} FINAL WHERE service = '${{service}}' AND $__timeFilter(judged_at)
GROUP BY t, judge_id ORDER BY t, judge_id"""

# Judges side by side on the same traces, by trace time: a window `ragpulse rejudge` scored again
# under a new judge id shows both ids' lines over the same traces (docs/review.md).
_JUDGES = "$__conditionalAll(judge_id IN (${judge:singlequote}), $judge)"
JUDGES_SIDE_BY_SIDE = f"""SELECT $__timeInterval(time) AS t, judge_id, avg(faithfulness) AS mean_faithfulness
FROM {_J} FINAL WHERE service = '${{service}}' AND error = '' AND $__timeFilter(time) AND {_JUDGES}
GROUP BY t, judge_id ORDER BY t, judge_id"""

JUDGES_FLAGGED = f"""SELECT $__timeInterval(time) AS t, judge_id,
  countIf(JSONExtractString(extra, 'response_verdict') = 'hallucinated') / count() AS hallucinated_answers
FROM {_J} FINAL WHERE service = '${{service}}' AND error = '' AND $__timeFilter(time) AND {_JUDGES}
GROUP BY t, judge_id ORDER BY t, judge_id"""


def _ch_vars(judge_all: bool = False) -> list[dict[str, Any]]:
    return [
        datasource_var("clickhouse", CH_PLUGIN, "ClickHouse"),
        constant_var("database", "ragpulse"),
        query_var("service", CH, f"SELECT DISTINCT service FROM {_T}", include_all=False),
        query_var(
            "judge",
            CH,
            f"SELECT DISTINCT judge_id FROM {_J} WHERE service = '${{service}}'",
            include_all=judge_all,
        ),
    ]


def drilldown() -> dict[str, Any]:
    """Worst traces of a service and window; a trace id opens its chunks and claims below."""
    lay = Layout()
    link = {
        "title": "Open this trace",
        "url": f"/d/{DRILLDOWN_UID}/ragpulse-trace-drill-down?var-service=${{service}}&var-judge=${{judge}}"
        "&var-trace_id=${__value.raw}&${__url_time_range}",
    }
    trace_links = [
        {"matcher": {"id": "byName", "options": "trace_id"}, "properties": [{"id": "links", "value": [link]}]}
    ]
    panels = [
        lay.row("Worst traces"),
        panel(lay, "Worst traces (filter by failure mode above; click a trace id)", [sql_target(WORST)], kind="table",
              w=24, h=12, overrides=trace_links),
        panel(lay, "Failure modes over time", [sql_target(MODES_OVER_TIME, "time_series")], w=24, h=7),
        panel(lay, "Sessions with flagged turns (trace_id: the latest flagged turn; click it)", [sql_target(SESSIONS_FLAGGED)],
              kind="table", w=24, h=8, overrides=trace_links),
        lay.row("Trace ${trace_id}"),
        panel(lay, "Trace", [sql_target(TRACE)], kind="table", w=24, h=5),
        panel(lay, "Retrieved chunks and the claims they support", [sql_target(CHUNKS)], kind="table", w=24, h=8),
        panel(lay, "Claims with their verdicts", [sql_target(CLAIMS)], kind="table", w=24, h=8),
    ]  # fmt: skip
    variables = [*_ch_vars(), custom_var("failure_mode", FAILURE_MODES), textbox_var("trace_id", "trace id")]
    return dashboard(DRILLDOWN_UID, "ragpulse trace drill-down",
                     "The worst judged traces with their unsupported claims and invalid citations, and one trace's chunks and verdicts.",
                     variables, panels)  # fmt: skip


REVIEW_LABELS = """SELECT reviewer, queue, label, count() AS labels, max(time) AS latest
FROM ${database}.rag_reviews FINAL WHERE service = '${service}' AND $__timeFilter(time)
GROUP BY reviewer, queue, label ORDER BY reviewer, queue, labels DESC"""


# The collector serves the labels stored (source="store", the same series from every replica: max);
# the review servers count the decisions each saw (summed), used where the store's series are absent.
REVIEW_DECISIONS = (
    'max by (queue, verdict) (increase(ragpulse_reviews_total{{source="store", {svc}}}[$__rate_interval]))\n'
    'or sum by (queue, verdict) (increase(ragpulse_reviews_total{{source!="store", {svc}}}[$__rate_interval]))'
)


def _review_panels(lay: Layout, config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Agreement with the reviewers of ``ragpulse review`` (its /metrics and rag_reviews) and the backlog."""
    floor = float(config["review_agreement"]["min_agreement"])
    svc = 'service=~"$service"'
    return [
        lay.row("Human review"),
        panel(lay, "Judge-human agreement (latest claim labels)",
              [prom_target(f"min by (judge) (ragpulse_judge_human_agreement{{{svc}}})", "{{judge}}")],
              w=8, h=8, unit="percentunit",
              description=f"Share of the latest claim labels (ragpulse review) on which the judge agrees with the "
                          f"reviewer; RagpulseJudgeHumanAgreementLow fires below {floor:g}"),
        panel(lay, "Review backlog", [prom_target(f"max by (queue) (ragpulse_review_backlog{{{svc}}})", "{{queue}}")],
              w=8, h=8, description="Eval cases still proposed, judged traces without a trace label"),
        panel(lay, "Review decisions", [prom_target(REVIEW_DECISIONS.format(svc=svc), "{{queue}} {{verdict}}")], w=8, h=8,
              description="Labels stored (the collector, from rag_reviews: once however many replicas serve it); "
                          "eval-case decisions, and labels where no collector serves them, from the review servers"),
        panel(lay, "Labels by reviewer (rag_reviews)", [sql_target(REVIEW_LABELS)], kind="table", w=24, h=7),
    ]  # fmt: skip


def judge_health(config: Mapping[str, Any]) -> dict[str, Any]:
    """Agreement between judges, tiers and reviewers, escalations, judge versions over time."""
    lay = Layout()
    versions_prom = prom_target(
        'sum by (judge) (rate(ragpulse_traces_judged_total{service=~"$service"}[$__rate_interval]))',
        "{{judge}}",
    )
    panels = [
        lay.row("Agreement"),
        panel(lay, "Judges on the same traces", [sql_target(JUDGE_PAIRS)], kind="table", w=24, h=7,
              description="Every pair of judges that judged the same traces: failure-mode agreement and verdict flips"),
        panel(lay, "Tiered judge: escalation rate, tier agreement, local-vs-LLM flips", [sql_target(TIER_FLIPS, "time_series")],
              w=16, h=8),
        panel(lay, "Escalation reasons", [sql_target(ESCALATION_REASONS)], kind="table", w=8, h=8),
        lay.row("Judge versions"),
        panel(lay, "Judgments by judge version (ClickHouse)", [sql_target(JUDGE_VERSIONS, "time_series")], w=12, h=8),
        panel(lay, "Judged traces by judge (Prometheus)", [versions_prom], w=12, h=8, unit="reqps"),
        panel(lay, "Mean faithfulness by judge, by trace time (a re-judged window shows both judges)",
              [sql_target(JUDGES_SIDE_BY_SIDE, "time_series")], w=12, h=8, unit="percentunit"),
        panel(lay, "Answers judged hallucinated by judge, by trace time", [sql_target(JUDGES_FLAGGED, "time_series")],
              w=12, h=8, unit="percentunit"),
        *_review_panels(lay, config),
    ]  # fmt: skip
    variables = [datasource_var("datasource", "prometheus", "Prometheus"), *_ch_vars(judge_all=True)]
    return dashboard(JUDGE_HEALTH_UID, "ragpulse judge health",
                     "Agreement between judges, tiers and reviewers, local-vs-LLM verdict flips, escalation rate, "
                     "judge versions over time, the review backlog.",
                     variables, panels)  # fmt: skip
