"""The Alertmanager webhook receiver: firing quality alerts queue their failing traces for export.

``POST /alertmanager`` takes Alertmanager's webhook payload (version 4). Every
alert whose ``alertname`` starts with ``Ragpulse`` and that carries a
``service`` label queues one window in ``rag_exports`` (collector/export/ledger.py):
from ``startsAt`` minus the alert's look-back (its ``window`` label or
annotation, e.g. ``1h``; else ``alertmanager.lookback_s``) to ``endsAt`` for a
resolved alert, or to the time of receipt while it fires. The next export
takes that service's *failing* traces of the window first, with reason
``alert:<alertname>``; an alert whose window holds none (a pipeline alert)
adds nothing. The row's key is the alert's fingerprint and start, so
Alertmanager's repeats of a group replace it instead of adding to it.

An optional bearer token (``alertmanager.token``; Alertmanager's
``http_config.authorization``) is required on every request when set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from typing import Any

from ..core.bearer import authorized
from ..export.ledger import queue_alert
from ..storage.clickhouse import Storage
from .http_server import BackgroundHTTPServer, QuietHandler, send

__all__ = ["AlertmanagerReceiver", "alert_windows_from_payload", "PATH"]

log = logging.getLogger("ragpulse.alertmanager")

PATH = "/alertmanager"
_MAX_BODY = 4 << 20
_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d|w)$")
_UNIT_NS = {
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
    "d": 86400 * 10**9,
    "w": 604800 * 10**9,
}


def _duration_ns(text: Any) -> int | None:
    m = _DURATION.match(str(text or "").strip())
    return int(m.group(1)) * _UNIT_NS[m.group(2)] if m else None


def _time_ns(text: Any) -> int | None:
    """An RFC 3339 time as Alertmanager writes it; None for its zero time or garbage."""
    if not isinstance(text, str) or text.startswith("0001-"):
        return None
    t = text.replace("Z", "+00:00")
    frac = re.match(r"^(.*\.\d{6})\d+(.*)$", t)  # Python parses at most microseconds
    if frac:
        t = frac.group(1) + frac.group(2)
    try:
        return int(datetime.fromisoformat(t).timestamp() * 1_000_000) * 1000
    except ValueError:
        return None


def alert_windows_from_payload(
    payload: Any, lookback_ns: int, now_ns: int
) -> list[tuple[str, str, str, int, int]]:
    """(key, alert name, service, window start, window end) per queueable alert; ValueError when
    the payload is not an Alertmanager webhook message."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("alerts"), list):
        raise ValueError("not an Alertmanager webhook payload (no 'alerts' list)")
    out = []
    for alert in payload["alerts"]:
        if not isinstance(alert, Mapping):
            raise ValueError("an alert is not an object")
        labels, annotations = alert.get("labels") or {}, alert.get("annotations") or {}
        name, service = str(labels.get("alertname", "")), str(labels.get("service", ""))
        starts = _time_ns(alert.get("startsAt"))
        if not name.startswith("Ragpulse") or not service or starts is None:
            continue
        back = _duration_ns(labels.get("window")) or _duration_ns(annotations.get("window")) or lookback_ns
        ends = _time_ns(alert.get("endsAt")) if alert.get("status") == "resolved" else None
        end = ends if ends is not None else now_ns
        ident = str(alert.get("fingerprint") or json.dumps(labels, sort_keys=True))
        key = "alert-" + hashlib.blake2b(f"{ident}\n{starts}".encode(), digest_size=10).hexdigest()
        out.append((key, name, service, starts - back, max(end, starts)))
    return out


class AlertmanagerReceiver(BackgroundHTTPServer):
    """``POST /alertmanager`` on its own port (see the module docstring)."""

    thread_name = "ragpulse-alertmanager"

    def __init__(
        self,
        storage: Storage,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str = "",
        lookback_s: float = 3600.0,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.storage = storage
        self.token = token
        self.lookback_ns = int(lookback_s * 1e9)
        self.clock = clock
        self.queued = 0
        outer = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                code, text = outer._handle(self)
                send(self, code, (text + "\n").encode(), "text/plain; charset=utf-8")

        self._bind(host, port, Handler)

    def _handle(self, req: BaseHTTPRequestHandler) -> tuple[int, str]:
        if req.path.split("?", 1)[0] != PATH:
            return 404, "not found"
        if not authorized(req.headers.get("Authorization"), self.token):
            return 401, "missing or wrong bearer token"
        try:
            length = int(req.headers.get("Content-Length") or 0)
        except ValueError:
            return 400, "bad Content-Length"
        if not 0 < length <= _MAX_BODY:
            return 413 if length > _MAX_BODY else 400, "body missing or too large"
        try:
            windows = alert_windows_from_payload(
                json.loads(req.rfile.read(length)), self.lookback_ns, self.clock()
            )
        except ValueError as exc:
            return 400, str(exc)
        try:
            for key, name, service, start, end in windows:
                queue_alert(self.storage, key, name, service, start, end)
        except Exception:  # noqa: BLE001 - Alertmanager retries on 5xx
            log.exception("queueing alert windows failed")
            return 503, "storage unavailable"
        self.queued += len(windows)
        return 200, f"queued {len(windows)} alert window(s)"


def start_from_config(cfg: Mapping[str, Any], storage: Storage) -> AlertmanagerReceiver | None:
    """The receiver of the ``alertmanager`` config section, started; None when disabled."""
    section = cfg.get("alertmanager") or {}
    if not section.get("enabled"):
        return None
    receiver = AlertmanagerReceiver(
        storage,
        str(section.get("host", "127.0.0.1")),
        int(section.get("port", 9465)),
        str(section.get("token") or ""),
        float(section.get("lookback_s", 3600)),
    ).start()
    log.info("Alertmanager webhook receiver on %s%s", receiver.url, PATH)
    return receiver
