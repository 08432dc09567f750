"""A real alert queues its cases: demo traffic -> Prometheus rules -> Alertmanager -> POST /alertmanager -> export.

The monitoring mixin's end-to-end stack (tests/alert_stack.py: a live demo
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
from ragpulse.collector.serve.alertmanager import AlertmanagerReceiver

from tests.alert_stack import ALERT, alert_stack, poll
from tests.live_demo import SERVICE, LiveDemo

TOKEN = "am-secret"


@pytest.fixture()
def stack(tmp_path: Path) -> Iterator[tuple[LiveDemo, AlertmanagerReceiver]]:
    receivers: list[AlertmanagerReceiver] = []

    def receiver_url(demo: LiveDemo) -> str:
        receivers.append(AlertmanagerReceiver(demo.collector.storage, token=TOKEN, lookback_s=60).start())
        return f"{receivers[0].url}/alertmanager"

    try:
        with alert_stack(tmp_path, receiver_url, token=TOKEN, repeat_interval="2s") as st:
            yield st.demo, receivers[0]
    finally:
        for r in receivers:
            r.stop()


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
    poll(
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
