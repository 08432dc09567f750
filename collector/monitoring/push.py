"""Provision the mixin in Grafana through grafana-client: folder, dashboards and (optionally) alert rules.

Every object is addressed by a fixed uid and compared with what Grafana holds
before anything is written, so a second run changes nothing and says so;
``dry_run`` reports what would change without writing. Grafana-managed alert
rules (``alerts=True``) are the same rules as ``rules/``, for teams that alert
from Grafana instead of Prometheus, provisioned through the alerting
provisioning API.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grafana_client import GrafanaApi
from grafana_client.client import GrafanaClientError, GrafanaException, GrafanaUnauthorizedError

__all__ = ["PushError", "PushResult", "connect", "push", "grafana_alert_rules"]

#: Keys Grafana adds or bumps on save, which say nothing about a dashboard's content.
_VOLATILE = ("id", "version")
RULE_GROUP = "ragpulse"


class PushError(RuntimeError):
    """Provisioning failed for a reason the user can fix (one line)."""


@dataclass
class PushResult:
    """What happened (or would happen, on a dry run) to each object: created, updated or unchanged."""

    changes: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, uid, action)

    @property
    def changed(self) -> bool:
        return any(action != "unchanged" for _, _, action in self.changes)


def connect(
    url: str, token: str | None = None, basic_auth: tuple[str, str] | None = None, timeout: float = 10.0
) -> GrafanaApi:
    """A client for the Grafana at ``url``, checked to be reachable and to be Grafana (GET /api/health)."""
    api = GrafanaApi.from_url(url, credential=token or basic_auth, timeout=timeout)
    health = _call(lambda: api.client.GET("/health"), f"Grafana at {url}")
    if not isinstance(health, dict) or "database" not in health:
        raise PushError(f"{url} answers, but not like Grafana (no /api/health); check --url")
    return api


def _call(fn: Callable[[], Any], what: str) -> Any:
    """Run one API call, turning transport and HTTP errors into one-line PushErrors."""
    try:
        return fn()
    except GrafanaUnauthorizedError:
        raise PushError(
            f"Grafana rejected the credentials (401) for {what}; check --token / --basic-auth"
        ) from None
    except GrafanaClientError as exc:
        if exc.status_code == 403:
            raise PushError(
                f"permission denied (403) for {what}: the credentials may not write there"
            ) from None
        raise PushError(f"{what}: {exc.message}") from None
    except GrafanaException as exc:
        raise PushError(f"cannot reach {what}: {str(exc.message).splitlines()[0][:200]}") from None
    except OSError as exc:  # niquests' connection errors derive from OSError
        raise PushError(f"cannot reach {what}: {str(exc).splitlines()[0][:200]}") from None


def _get_or_none(fn: Callable[[], Any], what: str) -> Any:
    try:
        return _call(fn, what)
    except PushError as exc:
        if "404" in str(exc) or "not found" in str(exc).lower():
            return None
        raise


def _folder(api: GrafanaApi, uid: str, title: str, dry_run: bool, result: PushResult) -> None:
    what = f"folder {title!r} ({uid})"
    existing = _get_or_none(lambda: api.folder.get_folder(uid), what)
    if existing is None:
        action = "created"
        if not dry_run:
            _call(lambda: api.folder.create_folder(title, uid=uid), what)
    elif existing.get("title") != title:
        action = "updated"
        if not dry_run:
            _call(lambda: api.folder.update_folder(uid, title=title, overwrite=True), what)
    else:
        action = "unchanged"
    result.changes.append(("folder", uid, action))


def _content(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in _VOLATILE}


def _dashboard(
    api: GrafanaApi, board: dict[str, Any], folder_uid: str, dry_run: bool, result: PushResult
) -> None:
    uid = board["uid"]
    what = f"dashboard {uid}"
    existing = _get_or_none(lambda: api.dashboard.get_dashboard(uid), what)
    if existing is None:
        action = "created"
    elif (
        _content(existing["dashboard"]) == _content(board)
        and existing.get("meta", {}).get("folderUid") == folder_uid
    ):
        action = "unchanged"
    else:
        action = "updated"
    if action != "unchanged" and not dry_run:
        body = {"dashboard": {**board, "id": None}, "folderUid": folder_uid, "overwrite": True,
                "message": "ragpulse dashboards push"}  # fmt: skip
        _call(lambda: api.dashboard.update_dashboard(body), what)
    result.changes.append(("dashboard", uid, action))


def grafana_alert_rules(
    rule_docs: Mapping[str, Any], folder_uid: str, datasource_uid: str
) -> list[dict[str, Any]]:
    """The alerting rules of ``rule_docs`` as Grafana-managed rules (provisioning API shape).

    Each rule queries Prometheus with the alert's own expression, which returns a series only
    while the alert condition holds; ``(expr) * 0 + 1`` keeps its labels and gives the threshold
    step a value to compare, so the rule fires exactly when the Prometheus alert would.
    """
    rules = []
    for doc in rule_docs.values():
        for group in doc["groups"]:
            for r in group["rules"]:
                if "alert" not in r:
                    continue
                key = r["alert"] + "".join(f"|{k}={v}" for k, v in sorted(r["labels"].items()))
                uid = "ragpulse-" + hashlib.sha256(key.encode()).hexdigest()[:16]
                suffix = "".join(f" {v}" for k, v in sorted(r["labels"].items()) if k != "severity")
                expr = "(\n" + r["expr"].rstrip("\n") + "\n) * 0 + 1"
                rules.append(
                    {
                        "uid": uid,
                        "title": f"{r['alert']}{suffix}",
                        "folderUID": folder_uid,
                        "ruleGroup": RULE_GROUP,
                        "condition": "B",
                        "data": [
                            {
                                "refId": "A",
                                "datasourceUid": datasource_uid,
                                "relativeTimeRange": {"from": 600, "to": 0},
                                "model": {"refId": "A", "expr": expr, "instant": True},
                            },
                            {
                                "refId": "B",
                                "datasourceUid": "__expr__",
                                "relativeTimeRange": {"from": 0, "to": 0},
                                "model": {
                                    "refId": "B",
                                    "type": "threshold",
                                    "expression": "A",
                                    "conditions": [{"evaluator": {"type": "gt", "params": [0]}}],
                                },
                            },
                        ],  # fmt: skip
                        "for": r["for"],
                        "labels": {**r["labels"], "alertname": r["alert"]},
                        "annotations": dict(r["annotations"]),
                        "noDataState": "OK",
                        "execErrState": "Error",
                        "isPaused": False,
                    }
                )
    return rules


_RULE_FIELDS = ("title", "folderUID", "ruleGroup", "condition", "data", "for", "labels", "annotations", "noDataState", "execErrState")  # fmt: skip


def _alert_rule(api: GrafanaApi, rule: dict[str, Any], dry_run: bool, result: PushResult) -> None:
    uid, what = rule["uid"], f"alert rule {rule['title']}"
    existing = _get_or_none(lambda: api.alertingprovisioning.get_alertrule(uid), what)
    if existing is None:
        action = "created"
        if not dry_run:
            _call(lambda: api.alertingprovisioning.create_alertrule(rule), what)
    elif all(existing.get(k) == rule[k] for k in _RULE_FIELDS):
        action = "unchanged"
    else:
        action = "updated"
        if not dry_run:
            _call(lambda: api.alertingprovisioning.update_alertrule(uid, rule), what)
    result.changes.append(("alert rule", uid, action))


def _prometheus_uid(api: GrafanaApi) -> str:
    """The uid of Grafana's default Prometheus datasource (or its only one)."""
    sources = [
        d
        for d in _call(api.datasource.list_datasources, "the datasource list")
        if d.get("type") == "prometheus"
    ]
    chosen = [d for d in sources if d.get("isDefault")] or sources
    if len(chosen) != 1:
        raise PushError(
            "--alerts needs one Prometheus datasource in Grafana (or --prometheus-uid); "
            f"found {len(sources)} and none is the default"
        )
    return str(chosen[0]["uid"])


def push(
    api: GrafanaApi,
    dashboards: Mapping[str, dict[str, Any]],
    *,
    folder: str = "ragpulse",
    folder_uid: str = "ragpulse",
    rule_docs: Mapping[str, Any] | None = None,
    prometheus_uid: str | None = None,
    dry_run: bool = False,
) -> PushResult:
    """Create or update the folder, every dashboard and (with ``rule_docs``) the alert rules."""
    result = PushResult()
    _folder(api, folder_uid, folder, dry_run, result)
    for board in dashboards.values():
        _dashboard(api, board, folder_uid, dry_run, result)
    if rule_docs is not None:
        ds = prometheus_uid or _prometheus_uid(api)
        for rule in grafana_alert_rules(rule_docs, folder_uid, ds):
            _alert_rule(api, rule, dry_run, result)
    return result
