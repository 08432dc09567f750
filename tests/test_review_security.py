"""The review app against other web sites and hostile trace text (docs/review.md#security).

In process, on the real app over a real chDB store holding one trace judged by the local judge,
whose query, chunk, answer, claims and service are hostile HTML, and an eval set whose cases
carry the same text and ids with ``/``: a page on another domain (DNS rebinding) gets 400 and
reads nothing; a cross-origin POST (another site, or a form on another port of localhost) gets
403 and writes nothing; every response forbids framing; ``back=`` never leaves the server; any
case id opens; every page shows the hostile text escaped. Over HTTP, ``ragpulse review
--allowed-host`` adds a name to the allow-list.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from markupsafe import escape
from ragpulse.collector.eval.files import write_jsonl
from ragpulse.collector.review.cases import apply_decision, case_digest, read_cases, save_case
from starlette.testclient import TestClient

from tests.review_server import ReviewServer, ragpulse
from tests.review_world import (
    BASE,
    HOSTILE_CASE_ID,
    SAME_ORIGIN,
    TRACE_ID,
    World,
    hostile,
    judge_hostile_trace,
    plain_case,
)


@pytest.fixture(scope="module")
def judged() -> dict[str, Any]:
    """The local judge's output for the hostile trace (judged once for the module)."""
    return judge_hostile_trace()


@pytest.fixture
def world(tmp_path: Path, judged: dict[str, Any]) -> Iterator[World]:
    w = World(tmp_path, judged)
    try:
        yield w
    finally:
        w.storage.close()


# -- Host: DNS rebinding


def test_a_rebinding_host_gets_400_and_nothing_is_read(world: World, tmp_path: Path) -> None:
    """The eval set does not exist, so a handler that ran would answer 500; the spy sees every
    store query."""
    paths = ("/", "/cases", f"/cases/{TRACE_ID}", "/judgments", f"/judgments/{TRACE_ID}", "/metrics")
    with world.client(evalset=tmp_path / "absent.jsonl") as client:
        world.queries.clear()
        for host in (
            "attacker.example",
            "attacker.example:8470",
            "127.0.0.1.attacker.example",
            "evil.localhost",
        ):
            for path in paths:
                resp = client.get(path, headers={"Host": host})
                assert resp.status_code == 400, (host, path, resp.status_code)
                assert resp.headers["x-frame-options"] == "DENY"
            resp = client.post(f"/judgments/{TRACE_ID}", data={"trace": "faithful"}, headers={"Host": host})
            assert resp.status_code == 400
        assert world.queries == []
        for host in ("127.0.0.1:8470", "localhost:8470", "[::1]:8470", "LOCALHOST"):
            assert client.get("/", headers={"Host": host}).status_code == 500, host  # the missing eval set
    assert world.reviews() == 0


def test_allowed_hosts_are_the_bound_address_loopback_and_the_ones_named(world: World) -> None:
    from ragpulse.collector.review.guard import allowed_hosts

    hosts = allowed_hosts("10.1.2.3", ["Review.Example.com", "*.corp.example", "fe80::1"])
    assert hosts == [
        "10.1.2.3",
        "localhost",
        "127.0.0.1",
        "[::1]",
        "review.example.com",
        "*.corp.example",
        "[fe80::1]",
    ]
    for bad in ("*", "http://review.example.com", "review.example.com:8470", "a/b", "", "a..b"):
        with pytest.raises(ValueError, match="not a host name"):
            allowed_hosts("127.0.0.1", [bad])
    with world.client(allowed_hosts=tuple(hosts)) as client:
        for host, status in (("review.example.com", 200), ("x.corp.example", 200), ("10.1.2.3:8470", 200),
                             ("[fe80::1]:8470", 200), ("corp.example", 400), ("review.example.com.evil", 400)):  # fmt: skip
            assert client.get("/", headers={"Host": host}).status_code == status, host


def _http(url: str, host: str | None = None) -> int:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_allowed_host_over_http(world: World) -> None:
    args = world.serve_args()
    with ReviewServer(*args, "--allowed-host", "review.example.com") as srv:
        port = urlsplit(srv.base()).port
        assert _http(srv.base("/")) == 200
        assert _http(srv.base("/"), f"review.example.com:{port}") == 200
        assert _http(srv.base("/"), f"attacker.example:{port}") == 400
        rc, err = srv.stop()
    assert rc == 0, err
    res = ragpulse("review", *args, "--allowed-host", "https://review.example.com", timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("ragpulse review: error: --allowed-host: not a host name: 'https://review")


# -- Origin: cross-site writes

CROSS_ORIGIN = (
    {"Origin": "http://attacker.example"},
    {"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"},
    {"Origin": "http://127.0.0.1:9999", "Sec-Fetch-Site": "same-site"},  # a form on another port
    {"Origin": "http://127.0.0.1:9999"},  # the same, from a browser without fetch metadata
    {"Origin": "null"},  # a sandboxed frame or a file:// page
    {"Sec-Fetch-Site": "cross-site"},
)


def test_a_cross_origin_post_gets_403_and_nothing_is_written(world: World, tmp_path: Path) -> None:
    evalset = tmp_path / "plain.jsonl"
    write_jsonl(evalset, [plain_case("c1")])
    with world.client(evalset=evalset) as client:
        url = "/cases/c1"
        page = client.get(url)
        assert page.status_code == 200
        digest = page.text.split('name="digest" value="', 1)[1].split('"', 1)[0]
        before = evalset.read_bytes()
        posts = (
            (url, {"action": "accept", "digest": digest}),
            (f"/judgments/{TRACE_ID}", {"trace": "unfaithful", "claim-0": "contradicted"}),
            ("/reviewer", {"reviewer": "mallory", "back": "/"}),
        )
        world.queries.clear()
        for headers in CROSS_ORIGIN:
            for path, form in posts:
                resp = client.post(path, data=form, headers=headers)
                assert resp.status_code == 403, (headers, path, resp.status_code)
                assert "set-cookie" not in resp.headers and "nothing was saved" in resp.text
        assert world.queries == []
        assert evalset.read_bytes() == before and world.reviews() == 0
        # The page itself posting (a browser sends its own origin), and a client that is no browser.
        for headers in (SAME_ORIGIN, {"Origin": BASE}, {}):
            resp = client.post(f"/judgments/{TRACE_ID}", data={"trace": "faithful"}, headers=headers)
            assert resp.status_code == 303, headers
        assert world.reviews() > 0
        assert (
            client.post(url, data={"action": "accept", "digest": digest}, headers=SAME_ORIGIN).status_code
            == 303
        )
        assert read_cases(evalset)[0]["review"]["status"] == "reviewed"


# -- frames


def _pages(client: TestClient) -> list[tuple[str, Any]]:
    out = []
    for path in ("/", "/cases", "/judgments", "/metrics", "/cases/nothing", f"/judgments/{TRACE_ID}"):
        resp = client.get(path, follow_redirects=True)
        out.append((path, resp))
    return out


def test_every_response_forbids_framing(world: World) -> None:
    with world.client(token="s3cret") as client:
        responses = [("401", client.get("/")), ("400", client.get("/", headers={"Host": "evil.example"}))]
        responses.append(("403", client.post("/reviewer", headers={"Origin": "http://evil.example"})))
        client.headers["Authorization"] = "Bearer s3cret"
        responses += _pages(client)
        responses.append(("303", client.post("/reviewer", data={"reviewer": "bob", "back": "/"})))
    for what, resp in responses:
        assert resp.headers["x-frame-options"] == "DENY", what
        csp = [d.strip() for d in resp.headers["content-security-policy"].split(";")]
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp, (what, csp)
        assert resp.headers["x-content-type-options"] == "nosniff"


# -- redirects


@pytest.mark.parametrize(
    "back",
    ["//evil.example/phish", "/\\evil.example", "/\t/evil.example", "/\n/evil.example", "\\\\evil.example",
     "http://evil.example/", "https:evil.example", "evil.example", "javascript:alert(1)", ""],
)  # fmt: skip
def test_back_never_leaves_the_server(world: World, back: str) -> None:
    with world.client() as client:
        resp = client.post("/reviewer", data={"reviewer": "bob", "back": back})
    assert resp.status_code == 303
    assert resp.headers["location"] == "/"


def test_back_keeps_a_local_page(world: World) -> None:
    with world.client() as client:
        for back in ("/cases/team%2Frefunds", "/cases?id=..", "/judgments/" + TRACE_ID):
            resp = client.post("/reviewer", data={"reviewer": "bob", "back": back})
            assert resp.status_code == 303 and resp.headers["location"] == back


# -- case ids


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _send(url: str, form: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(status, body, Location) of one request as the server answers it, redirects not followed."""
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    try:
        with urllib.request.build_opener(_NoRedirect).open(
            urllib.request.Request(url, data=data), timeout=30
        ) as r:
            return int(r.status), r.read().decode(), r.headers.get("location", "")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(), exc.headers.get("location", "")


def test_a_case_id_of_any_string_opens_and_saves(world: World) -> None:
    """Over HTTP (uvicorn decodes the path once, as in production), every id is reached as a
    reviewer reaches it: from the queue's redirect, then each ``next`` link and the redirect
    after a save; the page shows that case and saves it."""
    from ragpulse.collector.review.guard import case_url

    ids = [c["id"] for c in read_cases(world.evalset)]
    args = world.serve_args()
    with ReviewServer(*args) as srv:
        status, _, location = _send(srv.base("/cases"))
        assert status == 303
        for k, cid in enumerate(ids):
            assert location == case_url(cid), (cid, location)
            status, page, _ = _send(srv.base(location))
            assert status == 200, (cid, location, status)
            assert f'<code id="case-id">{escape(cid)}</code>' in page
            assert f'action="{escape(case_url(cid))}"' in page
            if k + 1 < len(ids):
                assert f'href="{escape(case_url(ids[k + 1]))}"' in page
            digest = page.split('name="digest" value="', 1)[1].split('"', 1)[0]
            status, body, location = _send(srv.base(location), {"action": "accept", "digest": digest})
            assert status == 303, (cid, body[:300])
        assert location == "/cases"
        rc, err = srv.stop()
    assert rc == 0, err
    assert all(c["review"]["status"] == "reviewed" for c in read_cases(world.evalset))


# -- hostile text on every page


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _check_page(what: str, resp: Any, shows: tuple[str, ...], texts: tuple[str, ...] = ()) -> None:
    """No markup of the hostile text runs: no <img> and no on* attribute anywhere, every <script>
    and <style> carries the response's CSP nonce; and each field the page shows is there, escaped."""
    assert resp.headers["content-type"].startswith("text/html"), what
    parser = _Tags()
    parser.feed(resp.text)
    nonce = resp.headers["content-security-policy"].split("script-src 'nonce-", 1)[1].split("'", 1)[0]
    for tag, attrs in parser.tags:
        assert tag != "img", (what, tag, attrs)
        assert not [a for a in attrs if a.startswith("on")], (what, tag, attrs)
        if tag in ("script", "style"):
            assert attrs.get("nonce") == nonce, (what, tag, attrs)
    assert "<script>alert(" not in resp.text and "onerror=\"alert('" not in resp.text, what
    for field in shows:
        assert str(escape(hostile(field))) in resp.text, (what, field)
    for text in texts:
        assert str(escape(text)) in resp.text, (what, text[:40])


def test_hostile_text_is_escaped_on_every_page(world: World) -> None:
    reviewer = hostile("reviewer")
    trace_fields = ("query", "chunk", "answer", "claim", "service", "chunk-id", "status", "reviewer")
    with world.client(reviewer=reviewer) as client:
        _check_page("index", client.get("/"), ("reviewer",))
        case = client.get("/cases", follow_redirects=True)
        _check_page("case", case, (*trace_fields, "reason"), (HOSTILE_CASE_ID, *world.claims))
        case_path = urlsplit(str(case.url)).path
        digest = case.text.split('name="digest" value="', 1)[1].split('"', 1)[0]
        form = {"action": "edit", "digest": digest, "split": hostile("split"), "gold_claims": hostile("gold")}
        invalid = client.post(case_path, data=form, headers=SAME_ORIGIN)
        assert invalid.status_code == 422
        _check_page("invalid case", invalid, ("query", "chunk", "answer", "service", "split", "gold"))
        first = read_cases(world.evalset)[0]
        save_case(world.evalset, apply_decision(first, "accept", {}, hostile("saver")), case_digest(first))
        conflict = client.post(case_path, data={"action": "accept", "digest": digest}, headers=SAME_ORIGIN)
        assert conflict.status_code == 409
        _check_page("conflict", conflict, ("query", "chunk", "answer", "service", "saver"))
        judgment = client.get("/judgments", follow_redirects=True)
        assert urlsplit(str(judgment.url)).path == f"/judgments/{TRACE_ID}"
        _check_page("judgment", judgment, trace_fields, tuple(world.claims))
        bad = {
            "trace": hostile("trace-label"),
            "claim-0": hostile("claim-label"),
            "comment": hostile("comment"),
        }
        invalid = client.post(f"/judgments/{TRACE_ID}", data=bad, headers=SAME_ORIGIN)
        assert invalid.status_code == 422
        _check_page("invalid judgment", invalid, trace_fields)
        assert str(escape(repr(hostile("claim-label")))) in invalid.text
        good = {"trace": "unfaithful", "claim-0": "contradicted", "comment": hostile("comment")}
        assert client.post(f"/judgments/{TRACE_ID}", data=good, headers=SAME_ORIGIN).status_code == 303
        _check_page("labelled judgment", client.get(f"/judgments/{TRACE_ID}"), (*trace_fields, "comment"))
        _check_page("judgments done", client.get("/judgments", follow_redirects=True), ("reviewer",))
        for path in ("/cases/" + HOSTILE_CASE_ID.replace("/", "%2F") + "x", "/judgments/" + "0" * 32):
            missing = client.get(path)
            assert missing.status_code == 404
            _check_page("404 " + path, missing, ("reviewer",))
        for c in read_cases(world.evalset)[1:]:
            save_case(world.evalset, apply_decision(c, "accept", {}, "ann"), case_digest(c))
        _check_page("cases done", client.get("/cases", follow_redirects=True), ("reviewer",))
        metrics = client.get("/metrics")
        assert metrics.headers["content-type"].startswith("text/plain")
        assert metrics.headers["x-content-type-options"] == "nosniff"
