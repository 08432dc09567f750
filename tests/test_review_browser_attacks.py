"""``ragpulse review`` attacked from other origins, in real headless Chromium.

The server runs over a store whose judged trace holds hostile HTML (tests/review_world.py). An
attacker's pages are served from another port of 127.0.0.1 (the same site, another origin)
and from ``evil.test`` (another site; Chromium resolves it to 127.0.0.1): their forms post a
label and a case decision (with the case's valid digest) to the review server, and one frames
a review page. A page on ``rebind.test``, resolved to 127.0.0.1 as DNS rebinding would, asks
for a trace. Chromium sends what it sends (``Origin``, ``Sec-Fetch-Site``, ``Host``); the
server must refuse each one, nothing may be written, no frame may show a review page, and the
review pages themselves must run no script of the trace text.
"""

from __future__ import annotations

import functools
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from ragpulse.collector.review.guard import case_url

from tests.browser import Browser
from tests.review_server import ReviewServer
from tests.review_world import HOSTILE_CASE_ID, TRACE_ID, World, judge_hostile_trace
from tests.services import chromium_binary


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_binary()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def attacker(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """(folder, port): a static web server for the attacker's pages on 127.0.0.1."""
    folder = tmp_path / "site"
    folder.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _form(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    return f'<form method="post" action="{action}">{inputs}</form><script>document.forms[0].submit()</script>'


def _landed(b: Browser, prefix: str, timeout: float = 30.0) -> str:
    """The page text once the tab shows a page under ``prefix`` (after the form's navigation)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (
            str(b.evaluate("location.href")).startswith(prefix)
            and b.evaluate("document.readyState") == "complete"
        ):
            return str(b.evaluate("document.body ? document.body.innerText : ''"))
        time.sleep(0.1)
    raise AssertionError(f"the tab never reached {prefix}: {b.evaluate('location.href')}")


def test_other_origins_can_neither_write_nor_frame_nor_read(
    chromium: str, tmp_path: Path, attacker: tuple[Path, int]
) -> None:
    world = World(tmp_path, judge_hostile_trace())
    before = world.evalset.read_bytes()
    site, site_port = attacker
    with ReviewServer(*world.serve_args()) as srv:
        port = urlsplit(srv.base()).port
        review = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(review + case_url(HOSTILE_CASE_ID), timeout=30) as resp:
            digest = resp.read().decode().split('name="digest" value="', 1)[1].split('"', 1)[0]
        (site / "label.html").write_text(_form(f"{review}/judgments/{TRACE_ID}", {"trace": "unfaithful"}))
        (site / "case.html").write_text(
            _form(review + case_url(HOSTILE_CASE_ID), {"action": "accept", "digest": digest})
        )
        (site / "frame.html").write_text(f'<iframe id="f" src="{review}/judgments/{TRACE_ID}"></iframe>')
        rules = "--host-resolver-rules=MAP evil.test 127.0.0.1, MAP rebind.test 127.0.0.1"
        with Browser(chromium, args=(rules,)) as b:
            for origin in (f"http://127.0.0.1:{site_port}", f"http://evil.test:{site_port}"):
                for page in ("label.html", "case.html"):
                    b.navigate(f"{origin}/{page}")
                    text = _landed(b, review)
                    assert text.startswith("403:") and "nothing was saved" in text, (origin, page, text)
                b.navigate(f"{origin}/frame.html")
                time.sleep(1.0)
                refused = [e for e in b.diagnostics().errors() if "frame-ancestors 'none'" in e]
                assert refused, b.diagnostics().errors()
            b.navigate(f"http://rebind.test:{port}/judgments/{TRACE_ID}")
            text = str(b.evaluate("document.body.innerText"))
            assert text.strip() == "Invalid host header", text
            # The review pages themselves: the trace's hostile text is text, no script of it ran.
            for path in (f"/judgments/{TRACE_ID}", case_url(HOSTILE_CASE_ID)):
                b.navigate(review + path)
                assert b.evaluate("document.querySelectorAll('img').length") == 0
                assert '<script>alert("query")</script>' in str(
                    b.evaluate("document.getElementById('query').textContent")
                )
                assert b.evaluate("document.querySelectorAll('script:not([nonce])').length") == 0
            dialogs = [e for e in b.pipe.events if e["method"] == "Page.javascriptDialogOpening"]
            assert dialogs == []
            csp = [
                e
                for e in b.diagnostics().errors()
                if "Content Security Policy" in e and "frame-ancestors" not in e
            ]
            assert csp == []
        rc, err = srv.stop()
    assert rc == 0, err
    world.reopen()
    try:
        assert world.reviews() == 0
    finally:
        world.storage.close()
    assert world.evalset.read_bytes() == before
