"""A real alert queues its cases: demo traffic -> Prometheus rules -> Alertmanager -> POST /alertmanager -> export.

The monitoring mixin's end-to-end stack (tests/test_mixin_e2e.py: a live demo
into an embedded collector, a real Prometheus evaluating the rendered rules
with test-sized windows, a real Alertmanager), with Alertmanager's webhook
pointed at the collector's receiver behind a bearer token. When the
generator hallucinates numbers the faithfulness burn alert fires, Alertmanager
delivers it, the receiver queues the window, and an export of the data puts
the window's failing traces first with reason ``alert:RagpulseFaithfulnessBudgetBurn``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ragpulse.collector.export.run import ExportOptions, run_export
from ragpulse.collector.monitoring.config import load_objectives
from ragpulse.collector.monitoring.rules import render_rules
from ragpulse.collector.serve.alertmanager import AlertmanagerReceiver

from tests.live_demo import SERVICE, LiveDemo
from tests.services import Alertmanager, Prometheus
from tests.test_mixin_e2e import ALERT, TEST_SIZED, _poll

TOKEN = "am-secret"


@pytest.fixture()
def stack(tmp_path: Path) -> Iterator[tuple[LiveDemo, AlertmanagerReceiver]]:
    demo = LiveDemo(tmp_path / "db", rate=40.0).start()
    receiver = AlertmanagerReceiver(demo.collector.storage, token=TOKEN, lookback_s=60).start()
    am = Alertmanager(
        "route:\n  receiver: ragpulse\n  group_by: [alertname, service]\n  group_wait: 1s\n"
        "  group_interval: 1s\n  repeat_interval: 2s\nreceivers:\n  - name: ragpulse\n    webhook_configs:\n"
        f"      - url: {receiver.url}/alertmanager\n        send_resolved: true\n"
        f"        http_config:\n          authorization:\n            credentials: {TOKEN}\n",
        workdir=tmp_path / "am",
    )
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    rendered = render_rules(load_objectives(overrides=TEST_SIZED))
    for name in ("ragpulse-recording.yaml", "ragpulse-slo-alerts.yaml"):
        (rules_dir / name).write_text(rendered[name])
    prom = None
    try:
        am.start()
        prom = Prometheus(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: ['{rules_dir}/*.yaml']\n"
            f"alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:{am.port}']\n"
            "scrape_configs:\n  - job_name: ragpulse\n    static_configs:\n"
            f"      - targets: ['{demo.metrics_url.removeprefix('http://')}']\n",
            workdir=tmp_path / "prom",
            extra_args=["--rules.alert.resend-delay=1s"],
        ).start()
        yield demo, receiver
    finally:
        demo.stop()
        receiver.stop()
        if prom:
            prom.cleanup()
        am.cleanup()


def _queued(demo: LiveDemo) -> list[tuple]:
    return demo.query(
        "SELECT reasons, service, toUnixTimestamp64Nano(window_start), toUnixTimestamp64Nano(window_end) "
        "FROM {db}.rag_exports FINAL WHERE kind = 'queued'"
    )


@pytest.mark.services
def test_a_delivered_alert_puts_its_failing_traces_first(stack, tmp_path: Path) -> None:
    demo, receiver = stack
    since = time.time_ns() - 10**9
    demo.set_rates()
    demo.run_in_background()
    demo.set_rates(hallucinated_number=1.0)
    _poll(
        "Alertmanager delivering the alert",
        lambda: any(q[0] == [f"alert:{ALERT}"] for q in _queued(demo)),
        150,
    )
    time.sleep(4)  # a repeat (repeat_interval 2s) replaces the row instead of adding one
    queued = [q for q in _queued(demo) if q[0] == [f"alert:{ALERT}"]]  # other burn alerts may fire too
    assert len(queued) == 1 and receiver.queued >= 2  # delivered, repeated, one row
    (_, service, start, end) = queued[0]
    assert service == SERVICE and start < end
    demo.set_rates()
    assert demo.flush()
    out = tmp_path / "evalset.jsonl"
    opts = ExportOptions(out, since, time.time_ns() + 60 * 10**9, dry_run=True)
    summary = run_export(demo.collector.storage, opts)
    assert summary.new_cases > 0
    records = [json.loads(line) for line in out.read_bytes().splitlines()]
    alerted = [f"alert:{ALERT}" in r["provenance"]["reasons"] for r in records]
    assert alerted[0] and alerted == sorted(alerted, reverse=True)
    in_window = demo.query(
        "SELECT t.trace_id FROM {db}.rag_traces AS t FINAL JOIN {db}.rag_judgments AS j FINAL USING trace_id "
        "WHERE j.failure_mode IN ('retrieval', 'generation', 'both') "
        f"AND toUnixTimestamp64Nano(t.time) BETWEEN {start} AND {end}"
    )
    first = {
        t
        for r in records
        if f"alert:{ALERT}" in r["provenance"]["reasons"]
        for t in r["provenance"]["trace_ids"]
    }
    assert in_window and {t for (t,) in in_window} <= first
