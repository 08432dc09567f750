"""The Alertmanager webhook receiver over real HTTP with Alertmanager's documented payload (version 4)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from ragpulse.collector.serve.alertmanager import AlertmanagerReceiver
from ragpulse.collector.storage.clickhouse import Storage

NOW = 1_796_040_000 * 10**9  # the receiver's clock in these tests (after the alerts start)


def _alert(name: str, status: str = "firing", **labels: str) -> dict:
    return {
        "status": status,
        "labels": {"alertname": name, "severity": "critical", **labels},
        "annotations": {"summary": "s", "description": "d"},
        "startsAt": "2026-11-30T10:00:00.123456789Z",
        "endsAt": "2026-11-30T10:30:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph",
        "fingerprint": f"fp-{name}-{labels.get('service', '')}",
    }


def _payload(*alerts: dict) -> bytes:
    return json.dumps({
        "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": "firing", "receiver": "ragpulse",
        "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "http://am:9093",
        "alerts": list(alerts),
    }).encode()  # fmt: skip


@pytest.fixture()
def receiver(tmp_path: Path):
    storage = Storage(f"chdb://{tmp_path / 'db'}")
    storage.apply_schema()
    r = AlertmanagerReceiver(storage, token="t0k", lookback_s=600, clock=lambda: NOW).start()
    yield r
    r.stop()
    storage.close()


def _post(
    r: AlertmanagerReceiver, body: bytes, token: str | None = "t0k", path: str = "/alertmanager"
) -> tuple[int, str]:
    req = urllib.request.Request(r.url + path, body, method="POST")
    req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _queued(r: AlertmanagerReceiver) -> list[tuple]:
    return r.storage.query(
        "SELECT reasons, service, toUnixTimestamp64Nano(window_start), toUnixTimestamp64Nano(window_end) "
        "FROM {db}.rag_exports FINAL WHERE kind = 'queued' ORDER BY service, reasons"
    )


def test_firing_and_resolved_quality_alerts_queue_windows_once(receiver):
    start = 1_796_032_800_123_456_000  # 2026-11-30T10:00:00.123456Z
    body = _payload(
        _alert("RagpulseFaithfulnessBudgetBurn", service="bot", window="1h"),
        _alert("RagpulseHallucinationBudgetBurn", status="resolved", service="shop"),
        _alert("RagpulseCollectorDown", instance="x:9464"),  # no service: not a quality alert
        _alert("SomeoneElsesAlert", service="bot"),
    )
    for _ in range(3):  # Alertmanager repeats a group on every repeat_interval
        assert _post(receiver, body) == (200, "queued 2 alert window(s)\n")
    assert _queued(receiver) == [
        (["alert:RagpulseFaithfulnessBudgetBurn"], "bot", start - 3600 * 10**9, NOW),
        (["alert:RagpulseHallucinationBudgetBurn"], "shop", start - 600 * 10**9, 1_796_034_600 * 10**9),
    ]


@pytest.mark.parametrize(
    "body, token, path, code",
    [
        (_payload(_alert("RagpulseX", service="a")), None, "/alertmanager", 401),
        (_payload(_alert("RagpulseX", service="a")), "wrong", "/alertmanager", 401),
        (_payload(_alert("RagpulseX", service="a")), "t0k", "/other", 404),
        (b"{not json", "t0k", "/alertmanager", 400),
        (b'{"alerts": "nope"}', "t0k", "/alertmanager", 400),
        (b'{"alerts": [42]}', "t0k", "/alertmanager", 400),
    ],
)
def test_bad_requests_are_refused_and_queue_nothing(receiver, body, token, path, code):
    assert _post(receiver, body, token, path)[0] == code
    assert _queued(receiver) == []
