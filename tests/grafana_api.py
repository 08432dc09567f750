"""A local HTTP server that answers the parts of Grafana's HTTP API that ``ragpulse dashboards push`` uses.

Grafana cannot be installed here, so the push tests run grafana-client against
this server. It answers the way Grafana's HTTP API reference documents
(``/api/health``, ``/api/folders``, ``/api/dashboards/uid/:uid``,
``/api/dashboards/db``, ``/api/datasources``,
``/api/v1/provisioning/alert-rules``), keeps state like Grafana does (ids,
versions, folder of each dashboard), and checks every request: the method and
path must be ones Grafana serves, the Authorization header must carry the
configured token or basic credentials (else 401), bodies must have the
documented fields (else 400), and a ``read_only`` server answers writes with
403 as Grafana does for a Viewer. Every request is logged for the tests.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from tests.http_thread import BackgroundServer, QuietHandler

__all__ = ["FakeGrafana"]


class FakeGrafana:
    """State and request log of one fake Grafana; ``url`` is its base URL."""

    def __init__(
        self, token: str = "glsa_test", basic: tuple[str, str] = ("admin", "s3cret"), read_only: bool = False
    ):
        self.accepted = {f"Bearer {token}", "Basic " + base64.b64encode(":".join(basic).encode()).decode()}
        self.read_only = read_only
        self.folders: dict[str, dict[str, Any]] = {}
        self.dashboards: dict[str, dict[str, Any]] = {}
        self.rules: dict[str, dict[str, Any]] = {}
        self.datasources = [
            {"id": 1, "uid": "prom-main", "name": "Prometheus", "type": "prometheus", "isDefault": True}
        ]
        self.log: list[tuple[str, str]] = []
        self._next_id = 1
        outer = self

        class Handler(QuietHandler):
            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                outer.log.append((method, self.path))
                code, payload = outer.handle(method, self.path, self.headers.get("Authorization", ""), body)
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

            def do_PUT(self) -> None:  # noqa: N802
                self._handle("PUT")

        self._http = BackgroundServer(Handler)
        self.url = self._http.url

    def close(self) -> None:
        self._http.close()

    @property
    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p in self.log if m != "GET"]

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def handle(self, method: str, path: str, auth: str, body: Any) -> tuple[int, Any]:
        if path == "/api/health" and method == "GET":  # served without authentication
            return 200, {"commit": "abc123", "database": "ok", "version": "11.3.0"}
        if auth not in self.accepted:
            return 401, {"message": "Invalid API key", "traceID": ""}
        if method != "GET" and self.read_only:
            return 403, {
                "accessErrorId": "ACE0000000001",
                "message": "You'll need additional permissions to perform this action.",
            }
        routes = [
            ("GET", r"/api/folders/([\w-]+)", self._get_folder),
            ("POST", r"/api/folders", self._create_folder),
            ("PUT", r"/api/folders/([\w-]+)", self._update_folder),
            ("GET", r"/api/dashboards/uid/([\w-]+)", self._get_dashboard),
            ("POST", r"/api/dashboards/db", self._save_dashboard),
            ("GET", r"/api/datasources", lambda _b: (200, self.datasources)),
            ("GET", r"/api/v1/provisioning/alert-rules/([\w-]+)", self._get_rule),
            ("POST", r"/api/v1/provisioning/alert-rules", self._create_rule),
            ("PUT", r"/api/v1/provisioning/alert-rules/([\w-]+)", self._update_rule),
        ]
        for m, pattern, fn in routes:
            match = re.fullmatch(pattern, path)
            if m == method and match:
                return fn(*match.groups(), body) if match.groups() else fn(body)
        return 404, {"message": "Not found"}

    # -- folders: GET/POST /api/folders, PUT /api/folders/:uid ------------------------------------

    def _get_folder(self, uid: str, _body: Any) -> tuple[int, Any]:
        if uid not in self.folders:
            return 404, {"message": "folder not found", "status": "not-found"}
        return 200, self.folders[uid]

    def _create_folder(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not body.get("title"):
            return 400, {"message": "folder title cannot be empty"}
        uid = body.get("uid") or f"f{self._id()}"
        if uid in self.folders:
            return 409, {"message": "a folder with the same uid already exists"}
        self.folders[uid] = {
            "id": self._id(),
            "uid": uid,
            "title": body["title"],
            "url": f"/dashboards/f/{uid}/",
            "version": 1,
        }
        return 200, self.folders[uid]

    def _update_folder(self, uid: str, body: Any) -> tuple[int, Any]:
        folder = self.folders.get(uid)
        if folder is None:
            return 404, {"message": "folder not found"}
        if not body.get("overwrite") and body.get("version") != folder["version"]:
            return 412, {
                "message": "the folder has been changed by someone else",
                "status": "version-mismatch",
            }
        folder.update(title=body.get("title", folder["title"]), version=folder["version"] + 1)
        return 200, folder

    # -- dashboards: GET /api/dashboards/uid/:uid, POST /api/dashboards/db -------------------------

    def _get_dashboard(self, uid: str, _body: Any) -> tuple[int, Any]:
        stored = self.dashboards.get(uid)
        if stored is None:
            return 404, {"message": "Dashboard not found"}
        folder = self.folders[stored["folderUid"]]
        meta = {
            "slug": uid,
            "folderUid": folder["uid"],
            "folderTitle": folder["title"],
            "version": stored["dashboard"]["version"],
        }
        return 200, {"dashboard": stored["dashboard"], "meta": meta}

    def _save_dashboard(self, body: Any) -> tuple[int, Any]:
        board = body.get("dashboard") if isinstance(body, dict) else None
        if not isinstance(board, dict) or not board.get("title") or not board.get("uid"):
            return 400, {"message": "Dashboard title cannot be empty"}
        folder_uid = body.get("folderUid", "")
        if folder_uid not in self.folders:
            return 400, {"message": "folder not found"}
        uid = board["uid"]
        old = self.dashboards.get(uid)
        if old is not None and not body.get("overwrite"):
            return 412, {"message": "A dashboard with the same uid already exists", "status": "name-exists"}
        ident = old["dashboard"]["id"] if old else self._id()
        version = old["dashboard"]["version"] + 1 if old else 1
        self.dashboards[uid] = {
            "dashboard": {**board, "id": ident, "version": version},
            "folderUid": folder_uid,
        }
        return 200, {
            "id": ident,
            "uid": uid,
            "url": f"/d/{uid}/{uid}",
            "status": "success",
            "version": version,
            "slug": uid,
        }

    # -- alert rules: /api/v1/provisioning/alert-rules ---------------------------------------------

    _RULE_REQUIRED = ("title", "folderUID", "ruleGroup", "condition", "data", "for", "noDataState", "execErrState")  # fmt: skip

    def _get_rule(self, uid: str, _body: Any) -> tuple[int, Any]:
        return (200, self.rules[uid]) if uid in self.rules else (404, {"message": "rule not found"})

    def _check_rule(self, body: Any) -> str | None:
        missing = [k for k in self._RULE_REQUIRED if k not in (body or {})]
        if missing:
            return f"invalid alert rule: missing {', '.join(missing)}"
        if body["folderUID"] not in self.folders:
            return "invalid alert rule: folder does not exist"
        if body["condition"] not in {d["refId"] for d in body["data"]}:
            return "invalid alert rule: condition refers to no query"
        return None

    def _create_rule(self, body: Any) -> tuple[int, Any]:
        problem = self._check_rule(body)
        if problem:
            return 400, {"message": problem}
        uid = body.get("uid") or f"r{self._id()}"
        self.rules[uid] = {**body, "uid": uid, "id": self._id(), "provenance": "api"}
        return 201, self.rules[uid]

    def _update_rule(self, uid: str, body: Any) -> tuple[int, Any]:
        if uid not in self.rules:
            return 404, {"message": "rule not found"}
        problem = self._check_rule(body)
        if problem:
            return 400, {"message": problem}
        self.rules[uid] = {**self.rules[uid], **body, "uid": uid}
        return 200, self.rules[uid]
