"""The monitoring mixin's end-to-end stack, shared by the alert tests.

A live demo into an embedded collector (tests/live_demo.py), a real
Prometheus scraping it every second and evaluating the mixin's recording and
SLO rules, rendered by the same renderer from the same config with test-sized
windows (seconds instead of minutes and hours, see docs/alerts.md), and a real
Alertmanager delivering to one webhook. :func:`alert_stack` owns all three
and stops them by PID.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpulse.collector.monitoring.config import load_objectives
from ragpulse.collector.monitoring.rules import render_rules

from tests.live_demo import LiveDemo
from tests.services import Alertmanager, Prometheus

__all__ = ["ALERT", "TEST_SIZED", "AlertStack", "alert_stack", "poll"]

ALERT = "RagpulseFaithfulnessBudgetBurn"

#: Test-sized windows: the production page is 1h/5m x 14.4 with 20 judged traces; here 20s/6s x 14.4 with 10.
TEST_SIZED = {
    "record_windows": ["6s", "20s"],
    "burn_windows": [
        {"name": "page-fast", "severity": "critical", "long": "20s", "short": "6s", "factor": 14.4, "for": "2s", "min_judged": 10}
    ],
}  # fmt: skip


@dataclass
class AlertStack:
    demo: LiveDemo
    prom: Prometheus
    am: Alertmanager


def poll(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.5) -> Any:
    """``check()``'s first truthy result, polled until ``timeout``; an AssertionError naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"{what}: not reached within {timeout:.0f}s")


def _alertmanager_config(url: str, token: str | None, repeat_interval: str) -> str:
    auth = (
        f"        http_config:\n          authorization:\n            credentials: {token}\n" if token else ""
    )
    return (
        "route:\n  receiver: hook\n  group_by: [alertname, service]\n  group_wait: 1s\n  group_interval: 1s\n"
        f"  repeat_interval: {repeat_interval}\nreceivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: {url}\n        send_resolved: true\n{auth}"
    )


@contextmanager
def alert_stack(
    tmp_path: Path,
    webhook: Callable[[LiveDemo], str],
    *,
    token: str | None = None,
    repeat_interval: str = "1h",
) -> Iterator[AlertStack]:
    """Start the stack; ``webhook(demo)`` gives the URL Alertmanager delivers to (with ``token`` as
    its bearer credentials), called once the demo's collector runs."""
    demo = LiveDemo(tmp_path / "db", rate=40.0).start()
    prom = am = None
    try:
        am = Alertmanager(
            _alertmanager_config(webhook(demo), token, repeat_interval), workdir=tmp_path / "am"
        )
        rules_dir = tmp_path / "rules"
        rules_dir.mkdir()
        rendered = render_rules(load_objectives(overrides=TEST_SIZED))
        for name in ("ragpulse-recording.yaml", "ragpulse-slo-alerts.yaml"):
            (rules_dir / name).write_text(rendered[name])
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
        yield AlertStack(demo, prom, am)
    finally:
        demo.stop()
        if prom:
            prom.cleanup()
        if am:
            am.cleanup()
