"""End to end on real servers: demo traffic -> collector -> Prometheus rules -> Alertmanager -> webhook.

A real Prometheus scrapes a real (embedded) collector serving the demo app's
traffic and evaluates the mixin's rules, rendered by the same renderer from the
same config with test-sized windows (tests/alert_stack.py, shared with the
alert-to-export test). When the generator is switched to hallucinate numbers, the
faithfulness burn alert must reach ``firing`` in ``/api/v1/alerts``, a real
Alertmanager must deliver it to the webhook receiver this test runs, and after
the traffic recovers the resolved notification must arrive. Everything is
polled; no wait is longer than the rules need.
"""

from __future__ import annotations

import json
import queue
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.alert_stack import ALERT, alert_stack, poll
from tests.http_thread import BackgroundServer, QuietHandler
from tests.live_demo import SERVICE, LiveDemo
from tests.services import Alertmanager, Prometheus


class Webhook:
    """An HTTP receiver for Alertmanager's webhook: every POSTed JSON body goes to a queue."""

    def __init__(self) -> None:
        self.received: queue.Queue[dict[str, Any]] = queue.Queue()
        outer = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.received.put(json.loads(body))
                self.send_response(200)
                self.end_headers()

        self._http = BackgroundServer(Handler)
        self.url = f"{self._http.url}/alerts"

    def wait_for(self, match: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                payload = self.received.get(timeout=left)
            except queue.Empty:
                break
            if match(payload):
                return payload
        raise AssertionError(f"no matching webhook notification within {timeout:.0f}s")

    def close(self) -> None:
        self._http.close()


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def _faithfulness_alerts(prom: Prometheus, state: str) -> list[dict[str, Any]]:
    alerts = _get_json(f"{prom.url}/api/v1/alerts")["data"]["alerts"]
    return [a for a in alerts if a["labels"]["alertname"] == ALERT and a["state"] == state]


def _notified(status: str) -> Callable[[dict[str, Any]], bool]:
    def match(payload: dict[str, Any]) -> bool:
        return any(
            a["labels"].get("alertname") == ALERT
            and a["status"] == status
            and a["labels"].get("service") == SERVICE
            for a in payload.get("alerts", [])
        )

    return match


@pytest.fixture()
def stack(tmp_path: Path) -> Iterator[tuple[LiveDemo, Prometheus, Alertmanager, Webhook]]:
    hook = Webhook()
    try:
        with alert_stack(tmp_path, lambda _demo: hook.url) as st:
            yield st.demo, st.prom, st.am, hook
    finally:
        hook.close()


@pytest.mark.services
def test_faithfulness_burn_fires_in_prometheus_is_delivered_and_resolves(stack) -> None:
    demo, prom, am, hook = stack
    demo.set_rates()  # faithful answers only (retrieval failures from the traffic remain)
    demo.run_in_background()

    def scraped_judgments() -> bool:
        q = _get_json(f"{prom.url}/api/v1/query?query=ragpulse:judged_traces:increase20s")["data"]["result"]
        return bool(q) and float(q[0]["value"][1]) >= 10

    poll("judged traces visible in Prometheus", scraped_judgments, 60)
    assert not _faithfulness_alerts(prom, "firing") and not _faithfulness_alerts(prom, "pending")

    demo.set_rates(hallucinated_number=1.0)  # every answer gets a number no chunk supports
    firing = poll("the faithfulness burn alert firing", lambda: _faithfulness_alerts(prom, "firing"), 90)
    alert = firing[0]
    assert alert["labels"]["severity"] == "critical" and alert["labels"]["service"] == SERVICE
    assert alert["labels"]["objective"] == "faithfulness" and alert["labels"]["window"] == "20s"
    assert float(alert["value"]) > 0.432
    notes = alert["annotations"]
    assert notes["runbook_url"].endswith("docs/alerts.md#ragpulsefaithfulnessbudgetburn")
    assert f"var-service={SERVICE}" in notes["dashboard_url"] and SERVICE in notes["summary"]

    delivered = hook.wait_for(_notified("firing"), 60)
    assert delivered["status"] == "firing" and delivered["receiver"] == "hook"

    demo.set_rates()  # recovery
    poll("the alert resolved in Prometheus", lambda: not _faithfulness_alerts(prom, "firing"), 90)
    resolved = hook.wait_for(_notified("resolved"), 60)
    resolved_alert = next(a for a in resolved["alerts"] if a["labels"]["alertname"] == ALERT)
    assert resolved_alert["endsAt"] > resolved_alert["startsAt"]
