"""The review pages show the conversation above the turn being labelled.

A conversation is served through the public agent API into a real embedded collector (local
judge, chDB): a first question, a follow-up answered wrongly, the user re-asking it, a last turn.
The judgments page of the follow-up shows the conversation the app recorded with it and the
session's turns from the store (the labelled turn marked, flagged and re-asked turns tagged,
the other turns linked); the eval-case page shows a case's ``provenance.conversation``. The
user's text is hostile HTML: it is escaped everywhere, and every script and style still carries
the response's CSP nonce.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import escape
from ragpulse.agent import configure, flush, shutdown
from ragpulse.collector.embedded.collector import EmbeddedCollector
from ragpulse.collector.review.app import ReviewSettings, build_app
from ragpulse.collector.review.store import ReviewStore
from starlette.testclient import TestClient

from tests.chat_app import chat_app, serve_conversations
from tests.review_world import BASE, hostile

CHUNKS = [{"id": "C1", "content": "Transaction logs are kept for five years.", "score": 0.9}]
FIRST = "How long are transaction logs kept? " + hostile("turn")
FOLLOW = "And audit logs, how long are they kept?"
TURNS = [
    (FIRST, "Transaction logs are kept for five years [1]."),
    (FOLLOW, "Transaction logs are kept for two years [1]."),  # contradicted: flagged
    (FOLLOW.lower().rstrip("?"), "Transaction logs are kept for five years [1]."),  # the user asks again
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    base = tmp_path_factory.mktemp("review-sessions")
    collector = EmbeddedCollector(base / "db", config={"sampling": {"rate": 1.0}}, metrics_port=None).start()
    configure(exporter="embedded", service_name="chat-svc", schedule_delay_ms=20)
    try:
        session = "s-" + hostile("session")
        serve_conversations(chat_app(CHUNKS), [(session, question, reply) for question, reply in TURNS])
        assert flush(10) and collector.flush(60)
        rows = collector.storage.query("SELECT trace_id, query FROM {db}.rag_traces FINAL ORDER BY time")
        yield {"collector": collector, "ids": {q: t for t, q in rows}, "base": base}
    finally:
        shutdown()
        collector.stop()


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))


def _safe(resp) -> None:
    """No markup of the user's text runs; every script and style carries the CSP nonce."""
    nonce = resp.headers["content-security-policy"].split("script-src 'nonce-", 1)[1].split("'", 1)[0]
    parser = _Tags()
    parser.feed(resp.text)
    for tag, attrs in parser.tags:
        assert tag != "img" and not [a for a in attrs if a.startswith("on")], (tag, attrs)
        if tag in ("script", "style"):
            assert attrs.get("nonce") == nonce
    assert "<script>alert(" not in resp.text


def _client(served: dict, evalset: Path) -> TestClient:
    store = ReviewStore(served["collector"].storage)
    judge = store.judges()[0][0]
    return TestClient(build_app(store, ReviewSettings(evalset, "ann", judge, 0.5)), base_url=BASE)


def test_the_judgment_page_shows_the_conversation_and_the_session_above_the_turn(
    served: dict, tmp_path: Path
) -> None:
    evalset = tmp_path / "evalset.jsonl"
    evalset.write_text("")
    follow = served["ids"][FOLLOW]
    with _client(served, evalset) as client:
        resp = client.get(f"/judgments/{follow}")
    assert resp.status_code == 200
    _safe(resp)
    page = resp.text
    block = page[page.index('id="conversation"') : page.index('id="query"')]  # above the labelled turn
    assert f"{escape(FIRST)}" in block and escape(TURNS[0][1]) in block
    assert [m for m in re.findall(r'data-role="(\w+)"', block)] == ["user", "assistant"]
    assert escape("s-" + hostile("session")) in block
    rows = re.findall(r'<tr class="turn([^"]*)" data-trace="([0-9a-f]+)"', block)
    assert [t for _, t in rows] == [served["ids"][q] for q, _ in TURNS]
    assert rows[1] == (" current flagged", follow)
    current = block[block.index(f'data-trace="{follow}"') :].split("</tr>", 1)[0]
    ((mode,),) = served["collector"].storage.query(
        "SELECT failure_mode FROM {db}.rag_judgments FINAL WHERE trace_id = %(t)s", {"t": follow}
    )
    assert mode in ("generation", "both")  # a wrong number: flagged
    assert (
        f"<td>{mode} " in current and "re-asked" in current and f'href="/judgments/{follow}"' not in current
    )
    assert f'href="/judgments/{served["ids"][FIRST]}"' in block  # the other turns are linked


def test_the_case_page_shows_the_cases_conversation(served: dict, tmp_path: Path) -> None:
    from ragpulse.collector.export.run import ExportOptions, run_export

    evalset = tmp_path / "evalset.jsonl"
    run_export(served["collector"].storage, ExportOptions(evalset, 0, 2**62))
    cases = [json.loads(x) for x in evalset.read_text().splitlines()]
    (case,) = [c for c in cases if c["query"] == FOLLOW]
    assert case["provenance"]["conversation"][0] == {"role": "user", "content": FIRST}
    with _client(served, evalset) as client:
        resp = client.get(f"/cases/{case['id']}")
    assert resp.status_code == 200
    _safe(resp)
    block = resp.text[resp.text.index('id="conversation"') : resp.text.index('id="query"')]
    assert escape(FIRST) in block and escape(TURNS[0][1]) in block and "session-turns" not in block
