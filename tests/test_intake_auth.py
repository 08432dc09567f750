"""The OTLP/HTTP intake's answers to empty requests and its bearer-token check, against the
embedded collector's real receiver and chDB: empty requests get 200 and store nothing (as the
OTel Collector answers them); with ``receiver.auth_token`` set, a request without the token, or
with a wrong one, gets 401 and stores nothing, and one with it is stored, the Bearer scheme
written in any case (RFC 7235)."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from ragpulse.collector.config import ConfigError, load_config
from ragpulse.collector.core.bearer import authorized, bearer_credentials, token_from_config
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.embedded.collector import EmbeddedCollector

PB, JS = "application/x-protobuf", "application/json"
TOKEN = "s3cret-token"


def _post(url: str, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": ctype, **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(scope="module")
def intake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCollector]:
    token_file = tmp_path_factory.mktemp("secret") / "token"
    token_file.write_text(TOKEN + "\n")
    collector = EmbeddedCollector(
        tmp_path_factory.mktemp("db") / "db",
        config={"sampling": {"rate": 0.0, "rules": []}, "receiver": {"auth_token_file": str(token_file)}},
        metrics_port=None, judge=None, receiver_port=0, install_sink=False,
    )  # fmt: skip
    collector.start()
    yield collector
    collector.stop()


def _stored(collector: EmbeddedCollector) -> int:
    assert collector.flush(30)
    return int(collector.storage.query("SELECT count() FROM {db}.rag_traces FINAL")[0][0])


def _empty_bodies() -> list[tuple[str, bytes, str, str | None]]:
    no_spans = TracesData()
    no_spans.resource_spans.add().scope_spans.add().scope.name = "idle"
    return [
        ("zero-length protobuf", b"", PB, None),
        ("resource and scope without spans", no_spans.SerializeToString(), PB, None),
        ("gzip of nothing", gzip.compress(b""), PB, "gzip"),
        ("{}", b"{}", JS, None),
        ('{"resourceSpans": []}', b'{"resourceSpans": []}', JS, None),
        (
            "resource without spans (JSON)",
            b'{"resourceSpans": [{"resource": {}, "scopeSpans": [{}]}]}',
            JS,
            None,
        ),
    ]


def test_empty_requests_get_200_and_store_nothing(intake: EmbeddedCollector) -> None:
    url = intake.receiver_url + "/v1/traces"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for name, body, ctype, encoding in _empty_bodies():
        headers = {**auth, **({"Content-Encoding": encoding} if encoding else {})}
        code, answer = _post(url, body, ctype, headers)
        assert code == 200, (name, answer)
        if ctype == JS:
            assert json.loads(answer) == {}, name
    # garbage is still refused: bytes that parse only as unknown protobuf fields, and JSON without spans' shape
    assert _post(url, b"\x58\x01", PB, auth)[0] == 400
    assert _post(url, b'{"resourceSpans": {}}', JS, auth)[0] == 400
    assert _stored(intake) == 0


def test_requests_without_the_token_get_401_and_store_nothing(intake: EmbeddedCollector) -> None:
    url = intake.receiver_url + "/v1/traces"
    before = _stored(intake)
    body = traces_data([(t.service, t.spans) for t in [make_trace(i) for i in range(3)]])
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"},
    ):
        code, answer = _post(url, body, PB, headers)
        assert code == 401, (headers, answer)
        assert b"bearer token" in answer
    code, answer = _post(url, json.dumps({"resourceSpans": []}).encode(), JS)
    assert code == 401 and json.loads(answer)["code"] == 401
    assert _stored(intake) == before
    assert _post(url, body, PB, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    assert _stored(intake) == before + 3


def test_the_token_comes_from_the_config_the_environment_or_a_file(tmp_path: Path) -> None:
    assert token_from_config({"auth_token": "abc"}) == "abc"
    # a token that reads as a YAML number stays text
    env = {"RAGPULSE_RECEIVER__AUTH_TOKEN": "0123e4"}
    assert load_config(None, env=env)["receiver"]["auth_token"] == "0123e4"
    secret = tmp_path / "token"
    secret.write_text("from-file\nignored\n")
    cfg = load_config(None, overrides={"receiver": {"auth_token_file": str(secret)}}, env={})
    assert token_from_config(cfg["receiver"]) == "from-file"
    with pytest.raises(ConfigError, match="auth_token_file .*missing"):
        load_config(None, overrides={"receiver": {"auth_token_file": str(tmp_path / "missing")}}, env={})
    (tmp_path / "blank").write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        load_config(None, overrides={"receiver": {"auth_token_file": str(tmp_path / "blank")}}, env={})
    checks: list[Any] = [authorized(None, ""), authorized("Bearer x", "x"), not authorized("Bearer y", "x")]
    assert all(checks)


def test_the_bearer_scheme_is_matched_in_any_case(intake: EmbeddedCollector) -> None:
    url = intake.receiver_url + "/v1/traces"
    before = _stored(intake)
    for i, header in enumerate((f"bearer {TOKEN}", f"BEARER {TOKEN}", f"bEaReR   {TOKEN} ")):
        t = make_trace(i, seed="scheme")
        code, answer = _post(url, traces_data([(t.service, t.spans)]), PB, {"Authorization": header})
        assert code == 200, (header, answer)
    for header in (f"Bearer{TOKEN}", "bearer", f"bearer {TOKEN}x", f"Basic {TOKEN}", f"Bearer x {TOKEN}"):
        assert _post(url, b"", PB, {"Authorization": header})[0] == 401, header
    assert _stored(intake) == before + 3


def test_bearer_credentials_follow_rfc_7235() -> None:
    assert bearer_credentials("Bearer abc") == "abc"
    assert bearer_credentials("bearer abc") == bearer_credentials("BEARER\tabc ") == "abc"
    assert bearer_credentials("Bearer a b") == "a b"  # the rest is the token; it will not match one
    for header in (None, "", "Bearer", "Bearer ", "Bearerabc", "Basic abc", "Token abc"):
        assert bearer_credentials(header) is None, header
    assert authorized("bearer x", "x") and authorized("BEARER x", "x")
    assert not authorized("bearer", "x") and not authorized(None, "x") and not authorized("x", "x")
