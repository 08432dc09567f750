"""The review web app: two queues over the store and an eval set, rendered on the server.

``/cases`` walks the eval set's ``proposed`` cases (accept, edit, reject;
:mod:`.cases` validates and writes back), ``/judgments`` walks judged traces
in the order of :meth:`.store.ReviewStore.queue` (a label per claim and per
trace into ``rag_reviews``), ``/metrics`` serves :mod:`.metrics`. With a token
configured every request must carry it (``Authorization: Bearer``, the cookie
the ``?token=`` link sets, or that query parameter); otherwise it gets 401
before any handler reads anything. Before that, :mod:`.guard` answers a
request naming another host (400) or a cross-origin write (403), and gives
every response its framing and content-security headers.
"""

from __future__ import annotations

import hmac
import re
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ..contract import ABSTENTION_KINDS, CLAIM_VERDICTS, FAILURE_MODES
from ..core.bearer import bearer_credentials
from .cases import (
    ACTIONS,
    EDITABLE_LISTS,
    SLICE_FIELDS,
    Conflict,
    Invalid,
    apply_decision,
    case_digest,
    read_cases,
    save_case,
)
from .guard import LOCAL_HOSTS, NONCE_KEY, SameOrigin, SecurityHeaders, case_url, local_path, request_target
from .labels import (
    INFORMATIVE,
    RANDOM,
    TRACE_LABELS,
    TRACE_LEVEL,
    Label,
)
from .metrics import ReviewMetrics
from .session_view import session_view
from .slices import DEFAULT_POOL, in_random_slice
from .store import QueueItem, ReviewStore, Scope
from .views import chunk_views, claim_spans, evidence_spans

__all__ = ["ReviewSettings", "build_app"]

TOKEN_COOKIE = "ragpulse_review_token"
REVIEWER_COOKIE = "ragpulse_reviewer"
_REVIEWER = re.compile(r"^[\w .@+-]{1,64}$")
_VERDICTS = {"accept": "accepted", "edit": "edited", "reject": "rejected"}
QUEUE_TTL_S = 10.0


@dataclass
class ReviewSettings:
    evalset: Path
    reviewer: str
    judge_id: str
    threshold: float
    token: str | None = None
    service: str | None = None
    since_ns: int | None = None
    last_n: int = 200  # claim labels behind the agreement gauge
    allowed_hosts: tuple[str, ...] = LOCAL_HOSTS  # Host names answered (guard.allowed_hosts)
    random_pool: float = DEFAULT_POOL  # share of the judged traces in the queue's random slice
    mean_below: float | None = None  # the judge's response rule (the response-boundary class)


class _Token(BaseHTTPMiddleware):
    """401 unless the request carries the token; ``?token=`` sets the cookie and drops the parameter."""

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    def _ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(str(value).encode(), self.token.encode())

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        bearer = bearer_credentials(request.headers.get("authorization"))
        if self._ok(bearer) or self._ok(request.cookies.get(TOKEN_COOKIE)):
            return await call_next(request)
        if self._ok(request.query_params.get("token")) and request.method == "GET":
            resp = RedirectResponse(request.url.remove_query_params("token"), status_code=303)
            resp.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
            return resp
        return PlainTextResponse(
            "401: this review server needs its token (Authorization: Bearer, or open the URL it printed)\n",
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )


class _Reviews:
    """The app's state: the store, the settings, the metrics and the templates."""

    def __init__(self, store: ReviewStore, settings: ReviewSettings) -> None:
        self.store, self.s = store, settings
        self.scope = Scope(settings.judge_id, settings.service, settings.since_ns)
        self.metrics = ReviewMetrics(self._gauges)
        self._lock = threading.Lock()
        self._queue: tuple[float, list[QueueItem]] | None = None
        self.env = Environment(
            loader=PackageLoader("ragpulse.collector.review", "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals["case_url"] = case_url

    def _gauges(self) -> dict[str, Any]:
        backlog: dict[tuple[str, str], int] = {}
        for c in read_cases(self.s.evalset) if self.s.evalset.stat().st_size else []:
            if (c.get("review") or {}).get("status", "proposed") == "proposed":
                svc = str((c.get("provenance") or {}).get("service") or "unknown")
                backlog[(svc, "cases")] = backlog.get((svc, "cases"), 0) + 1
        labelled = {
            lab.trace_id for lab in self.store.labels(judge_id=self.s.judge_id) if lab.claim_index < 0
        }
        for item in self.queue():
            if item.trace_id not in labelled:
                backlog[(item.service, "judgments")] = backlog.get((item.service, "judgments"), 0) + 1
        return {"agreement": self.store.agreement(self.s.last_n), "backlog": backlog}

    def queue(self) -> list[QueueItem]:
        """The judgments queue, read at most every :data:`QUEUE_TTL_S` seconds (a page asks for it
        several times; a save clears it)."""
        with self._lock:
            if self._queue is None or time.monotonic() - self._queue[0] > QUEUE_TTL_S:
                queue = self.store.queue(
                    self.scope, self.s.threshold, pool=self.s.random_pool, mean_below=self.s.mean_below
                )
                self._queue = (time.monotonic(), queue)
            return self._queue[1]

    def forget_queue(self) -> None:
        with self._lock:
            self._queue = None

    def reviewer(self, request: Request) -> str:
        name = request.cookies.get(REVIEWER_COOKIE, "")
        return name if _REVIEWER.match(name) else self.s.reviewer

    def render(self, request: Request, template: str, http_status: int = 200, **ctx: Any) -> HTMLResponse:
        ctx.update(reviewer=self.reviewer(request), path=request.url.path, settings=self.s)
        ctx.update(
            back=request_target(request.scope), nonce=request.scope.get("state", {}).get(NONCE_KEY, "")
        )
        return HTMLResponse(self.env.get_template(template).render(**ctx), status_code=http_status)

    def cases(self) -> list[dict[str, Any]]:
        return read_cases(self.s.evalset) if self.s.evalset.stat().st_size else []


def _status(case: dict[str, Any]) -> str:
    return str((case.get("review") or {}).get("status") or "proposed")


def _neighbours(ids: list[str], current: str) -> tuple[str | None, str | None]:
    if current not in ids:
        return None, ids[0] if ids else None
    i = ids.index(current)
    return (ids[i - 1] if i > 0 else None), (ids[i + 1] if i + 1 < len(ids) else None)


def _case_page(
    r: _Reviews, request: Request, case: dict[str, Any], cases: list[dict[str, Any]], **extra: Any
) -> HTMLResponse:
    prov = case.get("provenance") or {}
    trace_ids = prov.get("trace_ids") or []
    record = None
    if trace_ids and prov.get("judge_id"):
        record = r.store.judge_records_for([trace_ids[0]], str(prov["judge_id"])).get(trace_ids[0])
    claims = (record or {}).get("claims") or []
    chunks = prov.get("chunks") or []
    spans = evidence_spans(case.get("supporting_evidence_spans") or [])
    for doc, more in claim_spans(claims, chunks).items():
        spans.setdefault(doc, []).extend(more)
    prev_id, next_id = _neighbours([c["id"] for c in cases], case["id"])
    form = extra.pop("form", None) or {
        **{k: "\n".join(case.get(k) or []) for k in EDITABLE_LISTS},
        **{k: case.get(k) or "" for k in (*SLICE_FIELDS, "answerability")},
        "reason": (case.get("review") or {}).get("reason") or "",
    }
    done = sum(1 for c in cases if _status(c) != "proposed")
    return r.render(
        request, "case.html", extra.pop("http_status", 200), case=case, review_status=_status(case), claims=claims, chunks=chunk_views(chunks, spans),
        prov=prov, digest=extra.pop("digest", None) or case_digest(case), prev_id=prev_id, next_id=next_id,
        done=done, total=len(cases), form=form, errors=extra.pop("errors", {}), actions=ACTIONS, **extra,
    )  # fmt: skip


def _cases_first(r: _Reviews, request: Request) -> Response:
    cases = r.cases()
    first = next((c for c in cases if _status(c) == "proposed"), None)
    if first is None:
        return r.render(request, "empty.html", queue="cases", total=len(cases))
    return RedirectResponse(case_url(first["id"]), status_code=303)


def _case_id(request: Request) -> str | None:
    """The case a request names: ``/cases/<id>``, or ``/cases?id=`` (:func:`.guard.case_url`)."""
    return request.path_params.get("case_id", request.query_params.get("id"))


def _case_get(r: _Reviews, request: Request) -> Response:
    if _case_id(request) is None:
        return _cases_first(r, request)
    cases = r.cases()
    case = next((c for c in cases if c["id"] == _case_id(request)), None)
    if case is None:
        return r.render(request, "empty.html", 404, queue="cases", total=len(cases), missing=True)
    return _case_page(r, request, case, cases)


def _case_post(r: _Reviews, request: Request, form: dict[str, str]) -> Response:
    cid = _case_id(request)
    cases = r.cases()
    case = next((c for c in cases if c["id"] == cid), None)
    if case is None:
        return r.render(request, "empty.html", 404, queue="cases", total=len(cases), missing=True)
    action = form.get("action", "")
    try:
        new = apply_decision(case, action, form, r.reviewer(request))
        save_case(r.s.evalset, new, form.get("digest", ""))
    except Invalid as exc:
        return _case_page(
            r, request, case, cases, http_status=422, errors=exc.errors, form=form, digest=form.get("digest")
        )
    except Conflict as exc:
        return _case_page(r, request, exc.current or case, r.cases(), http_status=409, conflict=str(exc))
    r.metrics.count(str((case.get("provenance") or {}).get("service") or ""), "cases", _VERDICTS[action])
    cases = r.cases()
    ids = [c["id"] for c in cases]
    after = ids[ids.index(cid) + 1 :] + ids[: ids.index(cid)] if cid in ids else ids
    nxt = next((i for i in after if _status(cases[ids.index(i)]) == "proposed"), None)
    return RedirectResponse(case_url(nxt) if nxt else "/cases", status_code=303)


def _judgment_page(
    r: _Reviews, request: Request, trace_id: str, http_status: int = 200, **extra: Any
) -> Response:
    trace = r.store.trace(trace_id, r.s.judge_id)
    if trace is None or trace["judgment"] is None:
        return r.render(request, "empty.html", 404, queue="judgments", total=0, missing=True)
    queue = r.queue()
    ids = [q.trace_id for q in queue]
    item = next((q for q in queue if q.trace_id == trace_id), None)
    prev_id, next_id = _neighbours(ids, trace_id)
    mine = {
        lab.claim_index: lab for lab in r.store.labels(trace_ids=[trace_id], reviewer=r.reviewer(request))
    }
    claims = trace["judgment"]["claims"]
    return r.render(
        request, "judgment.html", http_status, trace=trace, record=trace["judgment"], claims=claims,
        chunks=chunk_views(trace["chunks"], claim_spans(claims, trace["chunks"])), item=item,
        prev_id=prev_id, next_id=next_id, position=ids.index(trace_id) + 1 if trace_id in ids else None,
        total=len(ids), mine=mine, trace_label=mine.get(TRACE_LEVEL), claim_labels=CLAIM_VERDICTS,
        trace_labels=TRACE_LABELS, abstention_kinds=ABSTENTION_KINDS, failure_modes=FAILURE_MODES,
        progress=r.store.progress(r.reviewer(request), r.scope), errors=extra.pop("errors", {}),
        session=session_view(r.store.storage, trace_id), **extra,
    )  # fmt: skip


def _next_unlabelled(r: _Reviews, after: str | None = None) -> str | None:
    ids = [q.trace_id for q in r.queue()]
    done = {lab.trace_id for lab in r.store.labels(judge_id=r.s.judge_id) if lab.claim_index == TRACE_LEVEL}
    if after in ids:
        k = ids.index(after)
        ids = ids[k + 1 :] + ids[:k]
    return next((t for t in ids if t not in done), None)


def _judgments_first(r: _Reviews, request: Request) -> Response:
    nxt = _next_unlabelled(r)
    if nxt is None:
        return r.render(request, "empty.html", queue="judgments", total=len(r.queue()))
    return RedirectResponse(f"/judgments/{nxt}", status_code=303)


def _judgment_post(r: _Reviews, request: Request, form: dict[str, str]) -> Response:
    trace_id = request.path_params["trace_id"]
    trace = r.store.trace(trace_id, r.s.judge_id)
    if trace is None or trace["judgment"] is None:
        return r.render(request, "empty.html", 404, queue="judgments", total=0, missing=True)
    errors: dict[str, str] = {}
    verdict = form.get("trace", "")
    if verdict not in TRACE_LABELS:
        errors["trace"] = "label the trace faithful or unfaithful before saving"
    kind, mode = form.get("abstention_kind", ""), form.get("failure_mode", "")
    if kind and kind not in ABSTENTION_KINDS:
        errors["abstention_kind"] = f"unknown abstention kind {kind!r}"
    if mode and mode not in FAILURE_MODES:
        errors["failure_mode"] = f"unknown failure mode {mode!r}"
    reviewer, jid = r.reviewer(request), r.s.judge_id
    labels = []
    for claim in trace["judgment"]["claims"]:
        value = form.get(f"claim-{claim['index']}", "")
        if value and value not in CLAIM_VERDICTS:
            errors[f"claim-{claim['index']}"] = f"unknown label {value!r}"
        elif value:
            labels.append(
                Label(trace_id, claim["index"], value, reviewer, jid, claim["text"], claim["verdict"])
            )
    if errors:
        return _judgment_page(r, request, trace_id, 422, errors=errors)
    labels.append(
        Label(trace_id, TRACE_LEVEL, verdict, reviewer, jid, "", trace["judgment"].get("response_verdict") or "",
              kind, mode, form.get("comment", "").strip()[:2000])
    )  # fmt: skip
    part = RANDOM if in_random_slice(trace_id, r.s.random_pool) else INFORMATIVE  # the queue slice it is in
    r.store.save_labels([replace(lab, slice=part) for lab in labels], "judgments", trace["service"])
    r.forget_queue()
    for lab in labels:
        r.metrics.count(trace["service"], "judgments", lab.label)
    nxt = _next_unlabelled(r, after=trace_id)
    return RedirectResponse(f"/judgments/{nxt}" if nxt else "/judgments", status_code=303)


def build_app(store: ReviewStore, settings: ReviewSettings) -> Starlette:
    """The Starlette app over ``store`` and the settings' eval set."""
    r = _Reviews(store, settings)

    def index(request: Request) -> Response:
        cases = r.cases()
        return r.render(
            request, "index.html", cases_total=len(cases),
            cases_open=sum(1 for c in cases if _status(c) == "proposed"),
            progress=store.progress(r.reviewer(request), r.scope), judged=len(r.queue()),
        )  # fmt: skip

    async def set_reviewer(request: Request) -> Response:
        form = await request.form()
        name = str(form.get("reviewer", "")).strip()
        back = str(form.get("back", "/"))
        resp = RedirectResponse(local_path(back), status_code=303)
        if _REVIEWER.match(name):
            resp.set_cookie(REVIEWER_COOKIE, name, samesite="strict")
        return resp

    async def case_post(request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        return await run_in_threadpool(_case_post, r, request, form)

    async def judgment_post(request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        return await run_in_threadpool(_judgment_post, r, request, form)

    def metrics(request: Request) -> Response:
        return Response(generate_latest(r.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    routes = [
        Route("/", index),
        Route("/reviewer", set_reviewer, methods=["POST"]),
        Route("/cases", lambda req: _case_get(r, req)),
        Route("/cases", case_post, methods=["POST"]),
        Route("/cases/{case_id:path}", lambda req: _case_get(r, req)),
        Route("/cases/{case_id:path}", case_post, methods=["POST"]),
        Route("/judgments", lambda req: _judgments_first(r, req)),
        Route("/judgments/{trace_id}", lambda req: _judgment_page(r, req, req.path_params["trace_id"])),
        Route("/judgments/{trace_id}", judgment_post, methods=["POST"]),
        Route("/metrics", metrics),
    ]
    middleware = [
        Middleware(SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=list(settings.allowed_hosts), www_redirect=False),
        Middleware(SameOrigin),
    ]
    if settings.token:
        middleware.append(Middleware(_Token, token=settings.token))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.reviews = r
    return app
