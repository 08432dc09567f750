"""The export's parts on their own: criteria files, near-duplicate grouping, the weekly schedule,
the file writer, and ``ragpulse feedback import`` (line-numbered errors, idempotent re-import)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from ragpulse.collector.cli.main import main
from ragpulse.collector.core.text import normalize_query
from ragpulse.collector.export.criteria import load_criteria
from ragpulse.collector.export.dedup import group_near_duplicates, match_existing
from ragpulse.collector.export.schedule import WEEK_NS, due_windows, run_scheduled, week_start
from ragpulse.collector.export.writer import read_existing, write_evalset
from ragpulse.collector.storage.clickhouse import Storage


def _ns(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()) * 10**9


def test_criteria_file_overrides_and_refuses_unknown_keys(tmp_path: Path) -> None:
    good = tmp_path / "c.yaml"
    good.write_text("failure_modes: [generation]\nfaithfulness_below: 0.5\n")
    c = load_criteria(good)
    assert c.failure_modes == ("generation",) and c.faithfulness_below == 0.5 and c.hallucination
    for text, why in [
        ("failure_mode: [x]\n", "unknown criteria key"),
        ("faithfulness_below: 3\n", "faithfulness_below"),
        ("- a\n", "must be a mapping"),
        ("hallucination: maybe\n", "hallucination must be true or false"),
    ]:
        good.write_text(text)
        with pytest.raises(ValueError, match=why):
            load_criteria(good)


def test_near_duplicates_group_by_exact_jaccard_and_match_earlier_cases() -> None:
    texts = [
        normalize_query(q)
        for q in (
            "How long are audit logs kept?",
            "how long are audit logs kept",
            "Please, how long are audit logs kept?",
            "Who approves vendor contracts?",
            "How long are audit logs kept?",
        )
    ]
    assert group_near_duplicates(texts, 0.7) == [[0, 1, 2, 4], [3]]
    assert match_existing([texts[2], normalize_query("Is parking free?")], [texts[3], texts[0]], 0.7) == [
        1,
        None,
    ]


def test_weekly_schedule_catches_up_missed_weeks(tmp_path: Path) -> None:
    monday = _ns("2026-11-30T00:00:00")
    assert week_start(_ns("2026-12-03T15:00:00")) == monday
    assert due_windows(None, _ns("2026-12-03T15:00:00")) == [(monday - WEEK_NS, monday)]
    runs: list[tuple[int, int]] = []

    def export(lo: int, hi: int) -> str:
        runs.append((lo, hi))
        return f"run{len(runs)}"

    assert run_scheduled(tmp_path, _ns("2026-11-18T02:00:00"), export) == ["run1"]  # first run
    assert run_scheduled(tmp_path, _ns("2026-11-19T02:00:00"), export) == []  # same week again
    assert run_scheduled(tmp_path, _ns("2026-12-08T02:00:00"), export) == ["run2", "run3", "run4"]
    assert [hi - lo for lo, hi in runs] == [WEEK_NS] * 4
    assert all(runs[i][1] == runs[i + 1][0] for i in range(3))  # no gap, no overlap
    assert runs[-1][1] == _ns("2026-12-07T00:00:00")


def test_writer_keeps_existing_lines_and_refuses_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_bytes(b'{"id": "case-1", "review": {"status": "reviewed"},   "query": "q"}\n')
    lines, ids = read_existing(path)
    # A case id the file already holds (written meanwhile by another run) is not appended twice.
    assert write_evalset(path, [{"id": "case-1", "query": "q2"}, {"id": "case-2", "query": "r"}]) == 1
    assert (
        path.read_bytes()
        == b'{"id": "case-1", "review": {"status": "reviewed"},   "query": "q"}\n{"id":"case-2","query":"r"}\n'
    )
    assert ids == {"case-1"}
    path.write_bytes(b'{"id": "a"}\nnot json\n')
    with pytest.raises(ValueError, match="set.jsonl:2: not JSON"):
        read_existing(path)


def test_feedback_import_reports_lines_and_stores_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "db"
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"trace_id": tid, "value": -1}) + "\n\n"
        + json.dumps({"trace_id": "nope", "value": -1}) + "\n"
        + json.dumps({"trace_id": tid, "value": 7}) + "\n"
        + json.dumps({"trace_id": tid, "label": "negative", "colour": "red"}) + "\n"
        + "[1]\n"
    )  # fmt: skip
    assert main(["feedback", "import", str(bad), "--db", str(db)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert [e.split(": ")[0] for e in err[:4]] == [f"{bad}:3", f"{bad}:4", f"{bad}:5", f"{bad}:6"]
    assert "4 invalid line(s); nothing imported" in err[-1]
    good = tmp_path / "tickets.jsonl"
    good.write_text(
        json.dumps({"trace_id": tid, "value": -1, "kind": "ticket", "id": "T-1", "time": "2026-11-30T10:00:00Z",
                    "comment": "wrong period, call +44 20 7946 0958"}) + "\n"
        + json.dumps({"trace_id": tid, "label": "positive", "service": "bot"}) + "\n"
    )  # fmt: skip
    for _ in range(2):
        assert main(["feedback", "import", str(good), "--db", str(db)]) == 0
    assert "imported 2 feedback row(s) (1 negative)" in capsys.readouterr().out
    storage = Storage(f"chdb://{db}")
    try:
        rows = storage.query(
            "SELECT feedback_id, kind, value, label, source, service FROM {db}.rag_feedback FINAL ORDER BY feedback_id"
        )
        (comment,) = storage.query(
            "SELECT comment FROM {db}.rag_feedback FINAL WHERE feedback_id = 'import:T-1'"
        )[0]
    finally:
        storage.close()
    assert len(rows) == 2 and rows[0] == ("import:T-1", "ticket", -1.0, "negative", "business", "")
    assert rows[1][1:] == ("import", None, "positive", "business", "bot")
    assert comment == "wrong period, call [REDACTED:PHONE]"
