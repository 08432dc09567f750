"""Acceptance of the loop back: production failures, feedback and an alert become eval-set cases.

5,000 judged traces of the policy assistant (injected failures), 60 held back
from judging, negative feedback on 50 traces (40 of them unjudged), 30
re-asks, one alert delivered over HTTP to the Alertmanager receiver. Then
``ragpulse export`` (the CLI, on the embedded database) three times: the file
holds exactly the cases the oracle (tests/eval_loop_world.py) expects, alert
cases first; a second run adds nothing; after new traffic a third adds only
the new cases and leaves a hand-reviewed case byte for byte as it was.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import jsonschema
import pytest
from ragpulse.collector.cli.main import main
from ragpulse.collector.core.text import jaccard, normalize_query, shingles
from ragpulse.collector.storage.clickhouse import Storage

from .eval_loop_world import (
    ALERT,
    NEAR_DUPLICATE,
    World,
    build_world,
    expected_cases,
    open_collector,
    settle,
)

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "evalset.schema.json").read_text())


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[World, int]:
    start = time.time_ns() - 60_000_000_000
    return build_world(tmp_path_factory.mktemp("loop") / "db", judged=5000, alert_slice=(2400, 2500)), start


def _export(world: World, out: Path, since: int, until: int, *extra: str) -> int:
    argv = ["export", "-o", str(out), "--db", str(world.db), "--since", _iso(since), "--until", _iso(until)]
    return main([*argv, "--holdout", "0.2", *extra])


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _check_against_oracle(records: list[dict], expected: list[tuple[set[str], set[str]]]) -> None:
    got = sorted((sorted(r["provenance"]["trace_ids"]), sorted(r["provenance"]["reasons"])) for r in records)
    want = sorted((sorted(ids), sorted(reasons)) for ids, reasons in expected)
    assert got == want
    for r in records:
        assert r["provenance"]["occurrences"] == len(r["provenance"]["trace_ids"])


def _check_first_run(world: World, storage: Storage, records: list[dict], since: int, until: int) -> None:
    _check_against_oracle(records, expected_cases(storage, since, until, set()))
    exported = {t for r in records for t in r["provenance"]["trace_ids"]}
    assert set(world.feedback) | set(world.reasked) <= exported  # every fed-back trace is a case
    judged = dict(storage.query("SELECT trace_id, sampled_reason FROM {db}.rag_judgments FINAL"))
    assert all(judged.get(t) == "rule:feedback" for t in world.feedback[:40])  # unjudged before
    assert sum(1 for t in world.holdback if t in judged) == 40
    alerted = [ALERT in " ".join(r["provenance"]["reasons"]) for r in records]
    assert any(alerted) and alerted == sorted(alerted, reverse=True)  # alert cases first
    reasons = {x for r in records for x in r["provenance"]["reasons"]}
    assert {"failure_mode:retrieval", "failure_mode:generation", "feedback:negative"} <= reasons
    modes = {world.modes[t] for t in exported if t in world.modes}
    assert {"superseded_source", "hallucinated_number", "wrong_citation"} <= modes
    merged = [r for r in records if r["provenance"]["occurrences"] > 1]
    assert merged and len(records) < len(exported)  # near-duplicate questions merged
    splits = {r["split"] for r in records}
    assert splits == {"dev", "holdout"}
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for r in records:
        validator.validate(r)


def _review(path: Path, world: World) -> tuple[bytes, str]:
    """Mark the first non-alert case reviewed, with edited gold, as a person would; returns its line."""
    lines = path.read_bytes().splitlines(keepends=True)
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if ALERT not in " ".join(rec["provenance"]["reasons"]):
            rec["review"] = {"status": "reviewed", "reviewer": "ana", "reviewed_at": "2026-12-01T09:00:00Z"}
            rec["gold_claims"] = ["Edited by hand."]
            lines[i] = (json.dumps(rec, indent=None) + "\n").encode()
            path.write_bytes(b"".join(lines))
            return lines[i], rec["query"]
    raise AssertionError("no case to review")


def _new_traffic(world: World, reviewed_query: str) -> list[str]:
    from .eval_loop_world import Traffic

    collector = open_collector(world.db)
    try:
        traffic = Traffic(world, seed=9)
        new = traffic.stream(300, seed=21)
        new.append(traffic.ask(reviewed_query))
        novel = [traffic.ask(q) for q in ("What colour is the office cat?", "Is parking free on Sundays?")]
        settle(collector)
        from ragpulse import agent

        for tid in novel + [new[-1]]:
            agent.feedback(tid, -1.0)
        settle(collector)
        return new + novel
    finally:
        from ragpulse import agent

        agent.shutdown()
        collector.stop()


def _expected_third(storage: Storage, earlier: list[dict], since: int, until: int) -> list[tuple[set, set]]:
    done = {t for r in earlier for t in r["provenance"]["trace_ids"]}
    old = [shingles(normalize_query(r["query"])) for r in earlier]
    queries = dict(storage.query("SELECT trace_id, query FROM {db}.rag_traces FINAL"))
    times = dict(storage.query("SELECT trace_id, toUnixTimestamp64Nano(time) FROM {db}.rag_traces FINAL"))
    fresh = []
    for ids, reasons in expected_cases(storage, since, until, done):
        first = min(ids, key=lambda t: (times[t], t))
        grams = shingles(normalize_query(queries[first]))
        if not any(jaccard(grams, g) >= NEAR_DUPLICATE for g in old):
            fresh.append((ids, reasons))
    return fresh


def test_export_loop_acceptance(
    world: tuple[World, int], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    w, since = world
    until = time.time_ns() + 60_000_000_000
    a, b, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "evalset.jsonl"
    assert _export(w, a, since, until, "--dry-run") == 0
    assert _export(w, b, since, until, "--dry-run") == 0
    _check_capped(w, a, tmp_path / "capped.jsonl", since, until)
    assert _export(w, out, since, until) == 0
    assert a.read_bytes() == b.read_bytes() == out.read_bytes()  # deterministic, byte for byte
    first = _records(out)
    manifest = json.loads((tmp_path / "evalset.manifest.json").read_text())
    assert manifest["counts"]["new_cases"] == len(first) and manifest["judge_ids"]
    storage = Storage(f"chdb://{w.db}")
    try:
        _check_first_run(w, storage, first, since, until)
    finally:
        storage.close()

    capsys.readouterr()
    before = out.read_bytes()
    assert _export(w, out, since, until) == 0
    assert "nothing new to export" in capsys.readouterr().out
    assert out.read_bytes() == before  # a second run adds nothing

    reviewed_line, reviewed_query = _review(out, w)
    edited = out.read_bytes()
    _new_traffic(w, reviewed_query)
    until3 = time.time_ns() + 60_000_000_000
    assert _export(w, out, since, until3) == 0
    after = out.read_bytes()
    assert after.startswith(edited) and reviewed_line in after  # nothing rewritten, reviewed case intact
    added = _records(out)[len(first) :]
    storage = Storage(f"chdb://{w.db}")
    try:
        _check_against_oracle(added, _expected_third(storage, first, since, until3))
        merged = storage.query(
            "SELECT length(trace_ids) FROM {db}.rag_exports FINAL WHERE kind = 'exported' AND case_id = %(c)s",
            {"c": json.loads(reviewed_line)["id"]},
        )
        assert merged[0][0] > len(json.loads(reviewed_line)["provenance"]["trace_ids"])
    finally:
        storage.close()
    assert added and all("feedback:negative" in r["provenance"]["reasons"] for r in added[-2:])
    jsonschema.Draft202012Validator(SCHEMA).validate(added[0])


def _check_capped(w: World, full: Path, capped: Path, since: int, until: int) -> None:
    """--max-per-reason 2 (dry run): fewer cases, yet every reason of the full export still there."""
    assert _export(w, capped, since, until, "--dry-run", "--max-per-reason", "2") == 0
    every = {x for r in _records(full) for x in r["provenance"]["reasons"]}
    kept = _records(capped)
    assert {x for r in kept for x in r["provenance"]["reasons"]} == every
    assert len(kept) <= 2 * len(every) and len(kept) < len(_records(full))
    alerted = [ALERT in " ".join(r["provenance"]["reasons"]) for r in kept]
    assert alerted == sorted(alerted, reverse=True)


def test_export_says_when_another_process_owns_the_database(world: tuple[World, int], tmp_path: Path) -> None:
    w, _ = world
    storage = Storage(f"chdb://{w.db}")
    try:
        storage.ping()
        proc = subprocess.run(
            [sys.executable, "-m", "ragpulse.collector.cli", "export", "-o", str(tmp_path / "x.jsonl"), "--db", str(w.db)],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
    finally:
        storage.close()
    assert proc.returncode == 2
    assert "in use by another process" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
