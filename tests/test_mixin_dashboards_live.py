"""The dashboards' queries against real components, after real demo traffic.

- Every PromQL expression parses (promtool checks a rules file made of them) and names only
  metrics and labels that the live collector's ``/metrics`` exposes (plus the mixin's recorded
  series and Prometheus's own ``up``), and so does every alert and recording rule: a reviewer
  labels judged traces through the real review app (``ragpulse review``), which fills
  ``rag_reviews``, and the collector serves the review series from the store (no review server
  is scraped).
- Every ClickHouse query runs on the real schema in chDB, with the grafana-clickhouse-datasource
  macros and the dashboard variables substituted the way the plugin does, and returns rows.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ragpulse.agent as agent
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.live_demo import SERVICE, LiveDemo
from tests.services import ROOT

DASHBOARDS = ROOT / "dashboards"
#: Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"job", "instance"}
_IDENT = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_METRIC = re.compile(r"\b(ragpulse[a-z0-9_:]*|up)\b(?=\s*[{\[)]|\s*$|\s+(?:/|\*|and|or|unless|>|<))")
_MATCHER = re.compile(rf"({_IDENT})\s*(?:=~|!~|!=|=)\s*\"")
_GROUPING = re.compile(r"\b(?:by|on|without|group_left|group_right|ignoring)\s*\(([^)]*)\)")
_LEGEND = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def _panels(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [q for p in d["panels"] for q in [p, *p.get("panels", [])]]


def _boards() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json"))]


def _prom_queries() -> list[tuple[str, str]]:
    """(expression, legend) of every Prometheus target; label_values() variables as their selector."""
    out = []
    for d in _boards():
        for p in _panels(d):
            out += [(t["expr"], t.get("legendFormat", "")) for t in p.get("targets", []) if "expr" in t]
        for v in d["templating"]["list"]:
            m = (
                re.fullmatch(r"label_values\((.*), (\w+)\)", v.get("query", ""))
                if v["type"] == "query"
                else None
            )
            if m and v["datasource"]["type"] == "prometheus":
                out.append((f"count by ({m.group(2)}) ({m.group(1)})", ""))
    return out


def _sql_queries() -> list[str]:
    out = []
    for d in _boards():
        for p in _panels(d):
            out += [t["rawSql"] for t in p.get("targets", []) if "rawSql" in t]
        out += [
            v["query"]
            for v in d["templating"]["list"]
            if v["type"] == "query" and "clickhouse" in v["datasource"]["type"]
        ]
    return out


def _promql(expr: str) -> str:
    """Grafana's variables substituted as an all-values selection."""
    return (
        expr.replace("$__rate_interval", "1m")
        .replace("$service", ".+")
        .replace("$judge", ".+")
        .replace("$variant", ".*")
    )


class _Unreachable:
    """A judge whose backend is down: every call raises, as an LLM judge's would without a network."""

    judge_id = "llm-unreachable"

    def judge(self, record: dict[str, Any]) -> dict[str, Any]:
        raise ConnectionError("judge backend unreachable")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveDemo, dict[str, set[str]]]]:
    """Demo traffic judged by the local judge, a share judged again by a stricter one; /metrics read after."""
    from ragpulse.collector.judge import get_judge

    demo = LiveDemo(tmp_path_factory.mktemp("dash") / "db").start()
    try:
        demo.serve(150)
        demo.serve_sessions(60)  # chat sessions: the Sessions row and the sessions table have data
        assert demo.flush()
        # Thumbs-down on three answers, through the public agent API (feedback series and requeues).
        for (tid,) in demo.query("SELECT trace_id FROM {db}.rag_traces FINAL ORDER BY trace_id LIMIT 3"):
            assert agent.feedback(tid, -1.0, comment="wrong retention period")
        assert demo.flush()
        demo.rejudge(get_judge("local", threshold=0.8), limit=60)
        demo.rejudge(_Unreachable(), limit=3)  # judge failures, recorded as errors by the worker
        # Series the embedded demo has no occasion to create (Kafka lag, dead letters, the cost and
        # budget pauses of an LLM judge; the local judge is free; unpriced traces: the demo prices
        # its models) are set through the collector's
        # own metric objects, whose .labels() raises on a wrong label name; the consumer lag is
        # read at scrape time, from a reader the Kafka loop attaches (here: one partition, lag 0).
        m = demo.collector.metrics
        m.consumer_lag.read_from(lambda: [(("ragpulse.spans", "0"), 0)])
        m.deadlettered.labels(kind="bad_record").inc(0)
        m.judge_budget_paused.labels(judge="local").inc(0)
        m.judge_cost.labels(service=SERVICE, judge="local").inc(0)
        m.generation_unpriced.labels(service=SERVICE, variant="generator-a", reason="unknown_model").inc(0)
        # A reviewer labels judged traces (rag_reviews); the collector serves the review series
        # from the store, so its /metrics alone is what the dashboards and alerts may name.
        _review_labels(demo, tmp_path_factory.mktemp("review"))
        with urllib.request.urlopen(demo.metrics_url + "/metrics", timeout=5) as resp:
            text = resp.read().decode()
        labels: dict[str, set[str]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels.setdefault(sample.name, set()).update(sample.labels)
        yield demo, labels
    finally:
        demo.stop()


def _review_labels(demo: LiveDemo, tmp: Path) -> None:
    """A reviewer labels three judged traces in the review app (the judge-health dashboard's Human
    review row reads rag_reviews, and the collector's /metrics serves the review series from it);
    the app's own /metrics serves its counters and the same gauges."""
    from ragpulse.collector.review.app import ReviewSettings, build_app
    from ragpulse.collector.review.store import ReviewStore
    from starlette.testclient import TestClient

    store = ReviewStore(demo.collector.storage)
    judge = store.judges(SERVICE)[0][0]
    evalset = tmp / "evalset.jsonl"
    evalset.write_text("")
    ids = [t for (t,) in demo.query(
        f"SELECT trace_id FROM {{db}}.rag_judgments FINAL WHERE judge_id = '{judge}' AND claims_total > 0 "
        "AND error = '' ORDER BY trace_id LIMIT 3")]  # fmt: skip
    records = store.judge_records_for(ids, judge)
    app = build_app(store, ReviewSettings(evalset, "ann", judge, 0.5))
    with TestClient(app, base_url="http://127.0.0.1:8470") as client:  # a Host the review app answers
        for tid in ids:
            form = {f"claim-{c['index']}": "supported" for c in records[tid]["claims"]}
            resp = client.post(
                f"/judgments/{tid}", data={**form, "trace": "faithful"}, follow_redirects=False
            )
            assert resp.status_code == 303, resp.text
        own = client.get("/metrics").text
    assert 'ragpulse_reviews_total{queue="judgments"' in own and "ragpulse_judge_human_agreement{" in own


def _recorded() -> dict[str, set[str]]:
    """Recorded series of the mixin and their labels (the by() labels and the rule's own labels)."""
    out: dict[str, set[str]] = {}
    for group in yaml.safe_load((ROOT / "rules" / "ragpulse-recording.yaml").read_text())["groups"]:
        for r in group["rules"]:
            names = set(r.get("labels", {}))
            for g in _GROUPING.findall(r["expr"]):
                names |= {x.strip() for x in g.split(",") if x.strip()}
            out.setdefault(r["record"], set()).update(names)
    return out


def _rule_metrics() -> dict[str, set[str]]:
    """Metric -> the rule files of rules/ whose expressions name it (recorded series left out)."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "rules").glob("*.yaml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                for name in _METRIC.findall(rule["expr"]):
                    out.setdefault(name, set()).add(path.name)
    return out


def test_every_metric_an_alert_or_dashboard_names_is_on_the_collectors_metrics(live) -> None:
    _, exposed = live
    recorded = _recorded()
    named = _rule_metrics()
    for expr, _ in _prom_queries():
        for name in _METRIC.findall(expr):
            named.setdefault(name, set()).add("dashboards")
    assert {"ragpulse_judge_human_agreement", "ragpulse_judge_human_labels", "ragpulse_review_backlog",
            "ragpulse_reviews_total"} <= set(named)  # fmt: skip
    missing = {
        m: sorted(where) for m, where in named.items() if m not in exposed and m not in recorded and m != "up"
    }
    assert not missing, f"named by rules or dashboards, not on the collector's /metrics: {missing}"


@pytest.mark.services
def test_every_promql_expression_parses(promtool: str, tmp_path: Path) -> None:
    queries = _prom_queries()
    assert len(queries) > 30
    rules = {"groups": [{"name": "dashboards", "rules": [{"record": f"dashboard:expr_{i}", "expr": _promql(e)} for i, (e, _) in enumerate(queries)]}]}  # fmt: skip
    path = tmp_path / "dashboard-exprs.yaml"
    path.write_text(yaml.safe_dump(rules))
    run = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"SUCCESS: {len(queries)} rules found" in run.stdout


@pytest.mark.services
def test_promql_names_only_metrics_and_labels_the_live_collector_exposes(live) -> None:
    _, exposed = live
    recorded = _recorded()
    known = {**exposed, **recorded, "up": TARGET_LABELS}
    for expr, legend in _prom_queries():
        metrics = set(_METRIC.findall(expr))
        assert metrics, f"no metric found in {expr!r}"
        missing = metrics - set(known)
        assert not missing, f"{expr!r} names {missing}, which /metrics does not expose after real traffic"
        available = TARGET_LABELS.union(*(known[m] for m in metrics))
        used = set(_MATCHER.findall(expr)) | set(_LEGEND.findall(legend))
        for g in _GROUPING.findall(expr):
            used |= {x.strip() for x in g.split(",") if x.strip()}
        assert used <= available, f"{expr!r} uses labels {used - available} that its metrics do not carry"


def _sql(text: str, variables: dict[str, str], t0: int, t1: int) -> str:
    """The plugin's macros and Grafana's variables, substituted as grafana-clickhouse-datasource does."""
    sql = re.sub(
        r"\$__timeFilter\((\w+)\)",
        lambda m: f"{m[1]} >= toDateTime({t0}) AND {m[1]} <= toDateTime({t1})",
        text,
    )
    sql = re.sub(
        r"\$__timeInterval\((\w+)\)",
        lambda m: f"toStartOfInterval(toDateTime({m[1]}), INTERVAL 20 second)",
        sql,
    )

    def conditional_all(m: re.Match[str]) -> str:
        return "1=1" if variables[m[2]] == "$__all" else m[1]

    sql = re.sub(r"\$__conditionalAll\((.*?), \$(\w+)\)", conditional_all, sql)
    sql = re.sub(
        r"\$\{(\w+):singlequote\}", lambda m: ", ".join(f"'{v}'" for v in variables[m[1]].split(",")), sql
    )
    sql = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables[m[1] or m[2]], sql)
    assert "$" not in sql, sql
    return sql


@pytest.mark.parametrize("failure_mode", ["$__all", "generation"])
def test_every_clickhouse_query_runs_on_the_real_schema_and_returns_rows(live, failure_mode: str) -> None:
    demo, _ = live
    judge = demo.query(
        "SELECT judge_id, count() AS n FROM {db}.rag_judgments FINAL GROUP BY judge_id ORDER BY n DESC"
    )[0][0]
    trace = demo.query(
        f"SELECT trace_id FROM {{db}}.rag_judgments FINAL WHERE judge_id = '{judge}' AND failure_mode = 'generation' "
        "ORDER BY trace_id LIMIT 1"
    )[0][0]
    variables = {"database": demo.collector.storage.database, "service": SERVICE, "judge": judge,
                 "trace_id": trace, "failure_mode": failure_mode}  # fmt: skip
    now = int(time.time())
    queries = _sql_queries()
    assert len(queries) >= 12
    for text in queries:
        rows = demo.query(_sql(text, variables, now - 3600, now + 60))
        assert rows, f"no rows for demo data:\n{text}"


def _counter_ratio(samples: list[Any], selector: str, judge: str) -> float:
    """Sum of the counter samples matching a config selector (``metric{l="v", l=~"a|b"}``) for one judge."""
    m = re.fullmatch(r"(\w+)(?:\{(.*)\})?", selector)
    assert m, selector
    matchers = re.findall(r'(\w+)(=~|=)"([^"]*)"', m[2] or "")
    total = 0.0
    for s in samples:
        if s.name != m[1] or s.labels.get("judge") != judge:
            continue
        if all(
            re.fullmatch(v, s.labels.get(k, "")) if op == "=~" else s.labels.get(k) == v
            for k, op, v in matchers
        ):
            total += s.value
    return total


def test_the_demo_report_checks_the_alerts_objectives_with_the_same_numbers(live) -> None:
    """The report's thresholds are the config's budgets, and its values (from ClickHouse) equal the
    ratios of the counters the alerts read (from /metrics) for the same judge."""
    from ragpulse.collector.demo.report import build_report
    from ragpulse.collector.monitoring.config import error_budget, load_objectives

    demo, _ = live
    config = load_objectives()
    report = build_report(demo.query, database=demo.collector.storage.database)
    by_name = {t.name: t for t in report.thresholds}
    with urllib.request.urlopen(demo.metrics_url + "/metrics", timeout=5) as resp:
        samples = [s for f in text_string_to_metric_families(resp.read().decode()) for s in f.samples]
    for name, obj in config["objectives"].items():
        t = by_name[name]
        assert (t.op, t.limit) == ("<=", error_budget(obj))
        bad = _counter_ratio(samples, obj["bad"], report.judge_id)
        total = _counter_ratio(samples, obj["total"], report.judge_id)
        assert total > 0 and t.value == pytest.approx(bad / total, abs=1e-6), name
    assert by_name["judge_error_rate"].limit == config["pipeline"]["judge_errors"]["max_ratio"]
