"""``ragpulse review`` without the browser: bad input, the token, write-back under concurrency and
conflicts, the labels' way into ``ragpulse calibrate``, and ``ragpulse eval`` skipping rejected cases.

The label tests use the demo as a reviewer: it labels judged traces from its injected ground
truth (``examples/demo_reviewer.py``), through the same store call as the app.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.eval.files import write_jsonl
from ragpulse.collector.export.writer import record_line, write_evalset
from ragpulse.collector.review.cases import Conflict, Invalid, apply_decision, case_digest, save_case

from tests.review_server import ENV, RAGPULSE, ReviewServer, demo_store, ragpulse
from tests.services import ROOT


def _case(cid: str, **extra: Any) -> dict[str, Any]:
    return {"id": cid, "query": f"question {cid}", "gold_claims": ["a claim"], "split": "dev",
            "review": {"status": "proposed", "reviewer": None, "reviewed_at": None}, **extra}  # fmt: skip


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A demo database, its exported eval set, and at least 150 claim labels from the ground truth."""
    base = tmp_path_factory.mktemp("labels")
    db, evalset = demo_store(base, queries=500)
    res = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo_reviewer.py"), "--db", str(db), "--claims", "150"],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    m = re.search(r"labelled (\d+) traces, (\d+) claims", res.stdout)
    truth = re.search(r"mean faithfulness (\d\.\d+)", res.stdout)
    assert m and truth, res.stdout
    return {"db": db, "evalset": evalset, "claims": int(m.group(2)), "truth": float(truth.group(1)),
            "out": res.stdout, "base": base}  # fmt: skip


# -- bad input


def test_bad_input_exits_with_one_clear_line(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    write_jsonl(good, [_case("c1")])
    write_jsonl(bad, [_case("c1"), {"id": "c2", "answerability": "maybe"}])
    cases = {
        "no database at": ["--db", str(tmp_path / "missing"), "--evalset", str(good)],
        "eval set fails docs/evalset.schema.json: ": ["--db", str(tmp_path), "--evalset", str(bad)],
        "no such eval set": ["--db", str(tmp_path), "--evalset", str(tmp_path / "none.jsonl")],
        "binding 0.0.0.0 needs a token": ["--db", str(tmp_path), "--evalset", str(good), "--host", "0.0.0.0"],
        "serving needs --evalset": ["--db", str(tmp_path)],
    }
    for message, args in cases.items():
        res = ragpulse("review", *args, timeout=60)
        assert res.returncode == 2, (message, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ragpulse review: error: ") and message in lines[0], (
            res.stderr
        )
    res = ragpulse("review", "--db", str(tmp_path), "--evalset", str(bad), timeout=60)
    assert "bad.jsonl:2: " in res.stderr and "'query' is a required property" in res.stderr


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=10) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def test_a_request_without_the_token_gets_401_and_reads_nothing(tmp_path: Path) -> None:
    """In process, on the real app over a real (empty) chDB store, with a spy counting every store
    query; the eval-set path does not exist, so any handler that ran would fail with 500."""
    from ragpulse.collector.review.app import ReviewSettings, build_app
    from ragpulse.collector.review.store import ReviewStore
    from ragpulse.collector.storage.clickhouse import Storage
    from starlette.testclient import TestClient

    storage = Storage(f"chdb://{tmp_path / 'db'}")
    storage.apply_schema()
    calls: list[str] = []
    real_query = storage.query
    storage.query = lambda sql, parameters=None: (calls.append(sql), real_query(sql, parameters))[1]  # type: ignore[method-assign]
    settings = ReviewSettings(tmp_path / "absent.jsonl", "bob", "local-x", 0.5, token="s3cret")
    try:
        app = build_app(ReviewStore(storage), settings)
        with TestClient(app, base_url="http://127.0.0.1:8470", raise_server_exceptions=False) as client:
            for path in ("/", "/cases", "/cases/c1", "/judgments", "/judgments/t1", "/metrics"):
                for headers in ({}, {"Authorization": "Bearer wrong"}):
                    resp = client.get(path, headers=headers, follow_redirects=False)
                    assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer", path
                    assert resp.text.startswith("401: this review server needs its token")
            resp = client.post("/cases/c1", data={"action": "accept", "digest": "x"})
            assert resp.status_code == 401
            assert calls == []
            # With the token the handlers run (and here fail on the missing eval set: they did read).
            for auth in ("Bearer s3cret", "bearer s3cret", "BEARER\ts3cret"):  # RFC 7235: any case
                assert client.get("/cases", headers={"Authorization": auth}).status_code == 500, auth
            resp = client.get("/judgments?token=s3cret", follow_redirects=False)
            assert resp.status_code == 303 and "ragpulse_review_token" in resp.headers["set-cookie"]
            assert resp.headers["location"].endswith("/judgments")
    finally:
        storage.close()


def test_the_token_over_http(labelled: dict[str, Any]) -> None:
    with ReviewServer(
        "--db", str(labelled["db"]), "--evalset", str(labelled["evalset"]), "--token", "s3cret"
    ) as srv:
        assert srv.url.endswith("/?token=s3cret")
        status, body, _ = _get(srv.base("/cases"))
        assert status == 401 and "question" not in body
        assert _get(srv.base("/metrics"))[0] == 401
        status, _, headers = _get(srv.base("/cases"), {"Authorization": "Bearer s3cret"})
        assert status == 303 and headers["location"].startswith("/cases/case-")
        status, body, _ = _get(srv.base("/metrics"), {"Authorization": "Bearer s3cret"})
        assert status == 200 and "ragpulse_judge_human_agreement{" in body
        rc, err = srv.stop()
    assert rc == 0, err


def _post(url: str, form: dict[str, str]) -> tuple[int, str]:
    data = urllib.parse.urlencode(form).encode()

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(
            urllib.request.Request(url, data=data), timeout=30
        ) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_two_reviewers_saving_one_case_over_http_the_second_gets_a_conflict(labelled: dict[str, Any]) -> None:
    evalset = labelled["evalset"]
    with ReviewServer("--db", str(labelled["db"]), "--evalset", str(evalset)) as srv:
        status, _, headers = _get(srv.base("/cases"))
        page = srv.base(headers["location"])
        digests = [re.search(r'name="digest" value="([0-9a-f]+)"', _get(page)[1]).group(1) for _ in range(2)]
        assert digests[0] == digests[1]
        assert _post(page, {"action": "accept", "digest": digests[0]})[0] == 303
        saved = evalset.read_bytes()
        status, body = _post(page, {"action": "reject", "digest": digests[1], "reason": "duplicate"})
        assert (
            status == 409 and 'id="conflict"' in body and "after you opened it; nothing was written" in body
        )
        assert evalset.read_bytes() == saved
        srv.stop()


# -- writing cases back


def test_invalid_decisions_name_their_field_and_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    write_jsonl(path, [_case("c1")])
    case = json.loads(path.read_text())
    with pytest.raises(Invalid) as exc:
        apply_decision(case, "edit", {"split": "prod", "gold_claims": "x"}, "ann")
    assert set(exc.value.errors) == {"split"}
    with pytest.raises(Invalid) as exc:
        apply_decision(case, "reject", {"reason": "  "}, "ann")
    assert exc.value.errors == {"reason": "a rejection needs a reason"}
    with pytest.raises(Invalid) as exc:
        apply_decision(case, "edit", {"answerability": "perhaps"}, "ann")
    assert "answerability" in exc.value.errors
    edited = apply_decision(case, "edit", {"gold_claims": " one \n\n two ", "risk_level": ""}, "ann")
    assert edited["gold_claims"] == ["one", "two"] and edited["risk_level"] is None
    assert edited["review"]["status"] == "reviewed" and edited["review"]["reviewer"] == "ann"


def test_a_second_reviewer_gets_a_conflict_not_an_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    write_jsonl(path, [_case("c1"), _case("c2")])
    case = next(c for c in map(json.loads, path.read_text().splitlines()) if c["id"] == "c1")
    seen = case_digest(case)  # both reviewers opened the same page
    save_case(path, apply_decision(case, "accept", {}, "ann"), seen)
    after_first = path.read_bytes()
    with pytest.raises(Conflict, match="reviewed by ann at .* after you opened it; nothing was written"):
        save_case(path, apply_decision(case, "reject", {"reason": "dup"}, "bob"), seen)
    assert path.read_bytes() == after_first


def test_export_appending_meanwhile_loses_nothing_and_never_rewrites_a_reviewed_case(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    write_jsonl(path, [_case(f"c{i}") for i in range(20)])
    opened = {c["id"]: c for c in map(json.loads, path.read_text().splitlines())}
    errors: list[BaseException] = []

    def review(i: int) -> None:
        try:
            case = opened[f"c{i}"]
            save_case(path, apply_decision(case, "accept", {}, f"r{i}"), case_digest(case))
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    def export(i: int) -> None:
        # A later export proposes the reviewed case again (same id) and a new one.
        write_evalset(path, [_case(f"c{i}", gold_claims=["proposed again"]), _case(f"new{i}")])

    threads = [threading.Thread(target=f, args=(i,)) for i in range(20) for f in (review, export)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    final = {c["id"]: c for c in map(json.loads, path.read_text().splitlines())}
    assert set(final) == {f"c{i}" for i in range(20)} | {f"new{i}" for i in range(20)}
    for i in range(20):
        assert final[f"c{i}"]["review"]["reviewer"] == f"r{i}"
        assert final[f"c{i}"]["gold_claims"] == ["a claim"]
    assert path.read_bytes().count(b"\n") == 40
    assert record_line(final["new3"]) in path.read_bytes()


# -- labels into calibrate


def test_calibrate_from_reviews_shows_kappa_and_a_ppi_interval_holding_the_truth(
    labelled: dict[str, Any],
) -> None:
    assert labelled["claims"] >= 150
    res = ragpulse("calibrate", "--from-reviews", "--db", str(labelled["db"]))
    assert res.returncode == 0, res.stderr
    m = re.search(r"^faithful\s+(\d+)\s+(\d\.\d+)\s+(-?\d\.\d+)", res.stdout, re.M)
    assert m, res.stdout
    ppi = re.search(r"mean faithfulness \(PPI\): (\d\.\d+)\s+95% CI \[(\d\.\d+), (\d\.\d+)\]", res.stdout)
    assert ppi, res.stdout
    lo, hi = float(ppi.group(2)), float(ppi.group(3))
    assert lo <= labelled["truth"] <= hi, (labelled["out"], res.stdout)


def test_export_labels_then_calibrate_equals_calibrate_from_reviews(labelled: dict[str, Any]) -> None:
    out = labelled["base"] / "labels.jsonl"
    res = ragpulse("review", "export-labels", "--db", str(labelled["db"]), "-o", str(out))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum("human" in r for r in rows) >= 100 and all("judge" in r for r in rows)
    from_file = ragpulse("calibrate", str(out), "--json")
    from_store = ragpulse("calibrate", "--from-reviews", "--db", str(labelled["db"]), "--json")
    assert from_file.returncode == 0 and from_store.returncode == 0, from_store.stderr
    assert json.loads(from_file.stdout) == json.loads(from_store.stdout)
    assert json.loads(from_store.stdout)["metrics"]["faithful"]["n"] >= 100


def test_calibrate_from_reviews_without_labels_says_so(tmp_path: Path) -> None:
    db, _ = tmp_path / "db", None
    res = ragpulse("schema", "apply", "--dsn", f"chdb://{db}")
    assert res.returncode == 0, res.stderr
    res = ragpulse("calibrate", "--from-reviews", "--db", str(db))
    assert (
        res.returncode == 2
        and res.stderr.strip() == "ragpulse calibrate: error: no judged traces in the store"
    )
    res = ragpulse("calibrate", "labels.jsonl", "--from-reviews")
    assert res.returncode == 2 and "either LABELS.jsonl or --from-reviews" in res.stderr


# -- eval


def test_eval_skips_rejected_cases_and_says_how_many(tmp_path: Path) -> None:
    from ragpulse.policy_rag.evalset import build_evalset

    cases = build_evalset()[:6]
    cases[1]["review"] = {"status": "rejected", "reviewer": "ann", "reviewed_at": "2026-12-01T00:00:00Z",
                          "reason": "not a policy question"}  # fmt: skip
    evalset, doc = tmp_path / "set.jsonl", tmp_path / "eval.json"
    write_jsonl(evalset, cases)
    res = ragpulse("eval", str(evalset), "--app", "ragpulse.policy_rag.replay:careful", "--corpus-from-snapshot",
                   "--json", str(doc), "-q", "--cache", str(tmp_path / "cache.sqlite"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "skipping 1 rejected case(s)" in res.stderr
    out = json.loads(doc.read_text())
    assert out["skipped_rejected"] == 1
    assert [c["case_id"] for c in out["cases"]] == [c["id"] for c in cases if c is not cases[1]]


# -- judge refit


@pytest.fixture(scope="module")
def refit_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo with two generator variants (more changed numbers), every claim labelled by the demo
    reviewer under the stricter team convention (a rule without one of its conditions is unsupported)."""
    base = tmp_path_factory.mktemp("refit")
    db = base / "chdb"
    res = ragpulse("demo", "--queries", "600", "--rate", "0", "--db", str(db), "--metrics-port", "0",
                   "--no-eval", "--variants", "--sample-rate", "1", "--report", str(base / "r.html"))  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo_reviewer.py"), "--db", str(db), "--claims", "0",
         "--strict-conditions"], capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return db


def test_refit_with_too_few_labels_says_how_many_more(labelled: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "w.json"
    res = ragpulse("judge", "refit", "--from-reviews", "--db", str(labelled["db"]), "-o", str(out))
    assert res.returncode == 2 and not out.exists()
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith("ragpulse judge refit: error: too few labels to refit: ")
    assert int(re.search(r"to refit: (\d+) claim labels", line).group(1)) == labelled["claims"]
    assert re.search(r"needs \d+ more unsupported or contradicted claims", line), line


def _refit(db: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return ragpulse("judge", "refit", "--from-reviews", "--db", str(db), "-o", str(out), *extra)


def test_refit_against_the_shipped_judge_says_which_and_why(refit_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "w.json"
    res = _refit(refit_db, out)
    figures = r"\s+\d\.\d{3}\s+\d\.\d{3}\s+\d\.\d{3}"  # answer-level, claim balanced accuracy, ECE
    assert re.search(r"shipped judge: claim head v\S+ \+ response rule v\S+" + figures, res.stdout), (
        res.stdout
    )
    assert re.search(r"refit on these labels" + figures, res.stdout), res.stdout
    assert (
        res.stdout.count("    fold ") == 5 and "refit: the claim head and the response rule\n" in res.stdout
    )
    assert re.search(r"answer-level balanced accuracy: gain [+-]\d\.\d{3}, 95% interval \[", res.stdout)
    if res.returncode == 0:
        assert out.exists() and "refit: better than the shipped judge on " in res.stdout
    else:
        assert res.returncode == 1 and not out.exists(), res.stderr
        assert re.search(r"^refused: .+; nothing written$", res.stdout, re.M), res.stdout


def _base(tmp_path: Path, name: str, **changes: Any) -> Path:
    from ragpulse.collector.judge.local.refit import read_base

    path = tmp_path / name
    path.write_text(json.dumps({**read_base(None).data, **changes}))
    return path


def test_a_refit_that_only_improves_ece_is_not_written(refit_db: Path, tmp_path: Path) -> None:
    """From the shipped head with its coefficients negated: on the demo every claim's verdict is
    decided by the judge's rules (one chunk supports it on its own, or its number is missing), so
    the backwards head moves only the probabilities. The refit recalibrates them, ECE gains far
    beyond noise, and nothing is written."""
    from ragpulse.collector.judge.local.refit import read_base

    data = read_base(None).data
    backwards = _base(
        tmp_path, "backwards.json", coef=[-c for c in data["coef"]], intercept=-data["intercept"]
    )
    out = tmp_path / "refit.json"
    res = _refit(refit_db, out, "--base", str(backwards))
    assert res.returncode == 1 and not out.exists(), res.stdout + res.stderr
    ece = re.search(r"ECE: gain \+(\d\.\d{3}), 95% interval \[\+(\d\.\d{3}), .*: better", res.stdout)
    assert ece and float(ece.group(2)) > 0.3, res.stdout
    assert "answer-level balanced accuracy: gain +0.000" in res.stdout
    assert res.stdout.rstrip().endswith(
        "refused: neither the answer-level decision nor claim balanced accuracy gains beyond noise "
        "(ECE does, and ECE alone never promotes); nothing written"
    )


@pytest.fixture(scope="module")
def lenient_refit(refit_db: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A refit from a base that supports every claim (verdict threshold 0.02, no number caps): the
    refit must beat it on held-out folds."""
    base = tmp_path_factory.mktemp("lenient")
    lenient = _base(base, "lenient.json", threshold=0.02, number_cap=0.9, joint_number_cap=0.9,
                    ordinal_number_cap=0.9)  # fmt: skip
    out = base / "refit.json"
    return {"base": lenient, "out": out, "res": _refit(refit_db, out, "--base", str(lenient)), "dir": base}


def test_a_refit_that_wins_is_written_and_gives_a_new_judge_id(lenient_refit: dict[str, Any]) -> None:
    from ragpulse.collector.judge.local.judge import LocalJudge

    res, out = lenient_refit["res"], lenient_refit["out"]
    assert res.returncode == 0, res.stdout + res.stderr
    assert "refit: better than the base lenient.json on answer-level balanced accuracy" in res.stdout
    new_id = re.search(r"judge id with it: (\S+) \(shipped: (\S+)\)", res.stdout)
    assert new_id and new_id.group(1) != new_id.group(2) and new_id.group(2) == LocalJudge().judge_id
    assert LocalJudge(claim_weights=str(out)).judge_id == new_id.group(1)
    written = json.loads(out.read_text())
    base = json.loads(lenient_refit["base"].read_text())
    assert written["features"] == base["features"] and written["version"].endswith("-refit")
    assert set(written["response"]) == {"version", "mean_below"}
    assert written["refit"]["held_out"]["answer-level balanced accuracy"]["verdict"] == "better"
    record = {"trace_id": "t1", "query": "How long are logs kept?", "answer": "Logs are kept for 90 days [1].",
              "chunks": [{"id": "C1", "content": "Audit logs are kept for 90 days."}]}  # fmt: skip
    judged = subprocess.run([*RAGPULSE, "judge", "--claim-weights", str(out)], input=json.dumps(record) + "\n",
                            capture_output=True, text=True, timeout=120, env=ENV)  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    assert json.loads(judged.stdout)["judge_id"] == new_id.group(1)


def test_exported_labels_and_traces_refit_to_the_same_file_as_from_reviews(
    refit_db: Path, lenient_refit: dict[str, Any]
) -> None:
    """``review export-labels -o labels --traces traces`` then ``judge refit --labels labels
    --traces traces`` writes the file ``--from-reviews`` wrote, byte for byte, and prints the same
    but for where the labels came from and the file's name."""
    base = lenient_refit["dir"]
    labels, traces, out = base / "labels.jsonl", base / "traces.jsonl", base / "from-files.json"
    res = ragpulse(
        "review", "export-labels", "--db", str(refit_db), "-o", str(labels), "--traces", str(traces)
    )
    assert res.returncode == 0, res.stderr
    n = int(re.search(r"wrote \S+traces.jsonl: (\d+) labelled traces", res.stdout).group(1))
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert n >= 100 and sum("claim_labels" in r for r in rows) >= 100
    from_files = ragpulse("judge", "refit", "--labels", str(labels), "--traces", str(traces), "--base",
                          str(lenient_refit["base"]), "-o", str(out))  # fmt: skip
    assert from_files.returncode == 0, from_files.stdout + from_files.stderr
    assert out.read_bytes() == lenient_refit["out"].read_bytes()

    def same(text: str) -> list[str]:
        return [re.sub(r"(from|wrote) \S.*$", "", line) for line in text.splitlines()]

    assert same(from_files.stdout) == same(lenient_refit["res"].stdout)
