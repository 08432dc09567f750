"""The judgments queue's random and informative slices, and ``calibrate`` using only the random one.

On the hand-written RAG cases judged by the local judge (answers in other words than their
chunks, so claim probabilities and the response rule decide): the queue serves every judged
trace once, the random slice (a fixed share chosen by a hash of the trace id, in hash order)
and the informative slice in turn, the informative one in its classes' order (an answer near
the response boundary, a claim near the threshold, feedback the judge disagrees with, ...);
a label saved in the app records the slice of its trace; a label table from before slices
gains the column in place; the prediction-powered interval takes only random-slice labels.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.judge.calibrate import calibration_report, ppi_mean
from ragpulse.collector.judge.local.claim_model import load_claim_model
from ragpulse.collector.judge.local.response import claim_score, load_response_rule
from ragpulse.collector.review.labels import INFORMATIVE, RANDOM, TRACE_LEVEL, Label
from ragpulse.collector.review.slices import PRIORITIES, random_key
from ragpulse.collector.review.store import ReviewStore, Scope

from tests.rag_cases import store_rag_cases
from tests.review_server import ENV, RAGPULSE

POOL, MARGIN = 0.3, 0.15


def _feedback(storage: Any, trace_id: str, label: str) -> None:
    storage.insert_rows(
        "rag_feedback",
        ("trace_id", "feedback_id", "time", "service", "kind", "value", "label", "comment", "source", "attributes"),
        [{"trace_id": trace_id, "feedback_id": f"f-{trace_id}", "time": time.time_ns(), "service": "s",
          "kind": "thumbs", "value": -1.0, "label": label, "comment": "", "source": "user", "attributes": "{}"}],
    )  # fmt: skip


@pytest.fixture()
def cases(chdb_storage: Any) -> tuple[ReviewStore, str]:
    return ReviewStore(chdb_storage), store_rag_cases(chdb_storage)


def test_the_queue_serves_both_slices_in_turn_each_trace_once(cases: tuple[ReviewStore, str]) -> None:
    store, judge = cases
    threshold, rule = load_claim_model().threshold, load_response_rule()
    records = store.judge_records(Scope(judge))
    before = store.queue(Scope(judge), threshold, MARGIN, POOL, rule.mean_below)
    healthy = [
        q.trace_id
        for q in before
        if q.priority == "other" and records[q.trace_id]["failure_mode"] == "healthy"
    ]
    _feedback(store.storage, healthy[0], "negative")  # users disagree with a healthy verdict
    queue = store.queue(Scope(judge), threshold, MARGIN, POOL, rule.mean_below)

    assert sorted(q.trace_id for q in queue) == sorted(records)  # every judged trace, once
    random = [q for q in queue if q.slice == RANDOM]
    informative = [q for q in queue if q.slice == INFORMATIVE]
    assert [q.trace_id for q in random] == sorted(
        (t for t in records if random_key(t) < POOL), key=random_key
    )
    assert 0.15 * len(records) < len(random) < 0.45 * len(records)
    n = min(len(random), len(informative))
    assert [q.slice for q in queue[: 2 * n]] == [RANDOM, INFORMATIVE] * n  # one of each in turn
    ranks = [PRIORITIES.index(q.priority) for q in informative]
    assert ranks == sorted(ranks) and {q.priority for q in random} == {"random sample"}
    assert next(q for q in queue if q.trace_id == healthy[0]).priority == "feedback disagrees"

    near = [q for q in informative if q.priority == "near the response boundary"]
    assert near and all(q.nearest <= MARGIN for q in near)
    for q in near:  # a claim not supported, none contradicted, the mean claim score near mean_below
        claims = records[q.trace_id]["claims"]
        verdicts = [c["verdict"] for c in claims]
        assert "contradicted" not in verdicts and any(v != "supported" for v in verdicts)
        mean = sum(claim_score(c["verdict"], c["support_probability"], threshold) for c in claims) / len(
            claims
        )
        assert abs(mean - rule.mean_below) == pytest.approx(q.nearest, abs=1e-3)
    others = {q.trace_id for q in informative if q.priority not in ("near the response boundary",)}
    assert not {q.trace_id for q in near} & others


def test_a_label_saved_in_the_app_records_its_traces_slice(
    cases: tuple[ReviewStore, str], tmp_path: Path
) -> None:
    from ragpulse.collector.review.app import ReviewSettings, build_app
    from starlette.testclient import TestClient

    store, judge = cases
    evalset = tmp_path / "evalset.jsonl"
    evalset.write_text("")
    settings = ReviewSettings(evalset, "ann", judge, load_claim_model().threshold, random_pool=POOL,
                              mean_below=load_response_rule().mean_below)  # fmt: skip
    queue = store.queue(Scope(judge), settings.threshold, MARGIN, POOL, settings.mean_below)
    records = store.judge_records(Scope(judge))
    with TestClient(build_app(store, settings), base_url="http://127.0.0.1:8470") as client:
        first = client.get("/judgments", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == f"/judgments/{queue[0].trace_id}"
        for item, after in ((queue[0], queue[1]), (queue[1], queue[2])):
            form = {f"claim-{c['index']}": "supported" for c in records[item.trace_id]["claims"]}
            resp = client.post(
                f"/judgments/{item.trace_id}", data={**form, "trace": "faithful"}, follow_redirects=False
            )
            assert resp.status_code == 303 and resp.headers["location"] == f"/judgments/{after.trace_id}"
    saved = store.labels(trace_ids=[queue[0].trace_id, queue[1].trace_id])
    assert {(lab.trace_id, lab.slice) for lab in saved} == {
        (queue[0].trace_id, RANDOM),
        (queue[1].trace_id, INFORMATIVE),
    }
    assert (
        len(saved)
        == len(records[queue[0].trace_id]["claims"]) + len(records[queue[1].trace_id]["claims"]) + 2
    )


def test_a_label_table_from_before_slices_gains_the_column(tmp_path: Path) -> None:
    from ragpulse.collector.storage.clickhouse import Storage

    storage = Storage(f"chdb://{tmp_path / 'db'}")
    try:
        storage.command("CREATE DATABASE IF NOT EXISTS {db}")
        storage.command(
            "CREATE TABLE {db}.rag_reviews (trace_id String, claim_index Int32, reviewer String, "
            "judge_id LowCardinality(String), queue LowCardinality(String), service LowCardinality(String), "
            "claim_text String, label LowCardinality(String), judge_label LowCardinality(String), "
            "abstention_kind LowCardinality(String), failure_mode LowCardinality(String), comment String, "
            "time DateTime64(3, 'UTC'), version UInt64) ENGINE = ReplacingMergeTree(version) "
            "ORDER BY (trace_id, claim_index, reviewer, judge_id)"
        )
        storage.command(
            "INSERT INTO {db}.rag_reviews (trace_id, claim_index, label, version) VALUES ('t1', -1, 'faithful', 1)"
        )
        storage.apply_schema()
        storage.apply_schema()  # idempotent
        store = ReviewStore(storage)
        assert [(lab.trace_id, lab.label, lab.slice) for lab in store.labels()] == [("t1", "faithful", "")]
        store.save_labels(
            [Label("t2", TRACE_LEVEL, "unfaithful", "ann", "j", slice=RANDOM)], "judgments", "s"
        )
        assert {lab.trace_id: lab.slice for lab in store.labels()} == {"t1": "", "t2": RANDOM}
    finally:
        storage.close()


def _rows() -> list[dict[str, Any]]:
    """Labelled rows: 40 of the random slice where the judge is right, 20 informative ones where
    it is wrong (the traces a reviewer picks because the judge struggles); 100 judged traces."""
    rows: list[dict[str, Any]] = []
    for i in range(160):
        judge = {"trace_id": f"t{i}", "judge_id": "j", "faithfulness": 0.9 if i % 2 else 1.0}
        row: dict[str, Any] = {"trace_id": f"t{i}", "judge": judge}
        if i < 40:
            row.update(human={"faithfulness": judge["faithfulness"]}, slice=RANDOM)
        elif i < 60:
            row.update(human={"faithfulness": 0.2}, slice=INFORMATIVE)
        rows.append(row)
    return rows


def test_the_interval_takes_only_the_random_slice(tmp_path: Path) -> None:
    rows = _rows()
    rep = calibration_report(rows, n_boot=200)
    ppi = rep["ppi_faithfulness"]
    judged = [r["judge"]["faithfulness"] for r in rows[40:]]
    est, lo, hi = ppi_mean(
        [r["human"]["faithfulness"] for r in rows[:40]],
        [r["judge"]["faithfulness"] for r in rows[:40]],
        judged,
    )
    assert (ppi["n_labelled"], ppi["n_judged"], ppi["labels"]) == (40, 120, "the random slice only")
    assert ppi["estimate"] == pytest.approx(est, abs=1e-4) and ppi["ci95"] == pytest.approx(
        [lo, hi], abs=1e-4
    )
    assert rep["slices"] == {RANDOM: 40, INFORMATIVE: 20} and rep["metrics"]["faithfulness"]["n"] == 60
    # The same labels without slices: every labelled row counts, and the hard cases pull it down.
    plain = calibration_report([{k: v for k, v in r.items() if k != "slice"} for r in rows], n_boot=200)
    assert plain["ppi_faithfulness"]["n_labelled"] == 60 and plain["ppi_faithfulness"]["estimate"] < est - 0.1
    assert (
        plain["ppi_faithfulness"]["labels"] == "all labelled rows (no slice recorded)"
        and plain["slices"] == {}
    )

    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = subprocess.run(
        [*RAGPULSE, "calibrate", str(path)], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "labelled traces: 60  (informative 20, random 40)" in res.stdout
    assert (
        f"mean faithfulness (PPI): {est:.4f}" in res.stdout and "labels: the random slice only" in res.stdout
    )


def test_calibrate_says_when_no_label_is_of_the_random_slice(tmp_path: Path) -> None:
    rows = [r for r in _rows() if r.get("slice") != RANDOM]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = subprocess.run([sys.executable, "-m", "ragpulse.collector.cli", "calibrate", str(path)],
                         capture_output=True, text=True, env=ENV, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "mean faithfulness (PPI): needs labels of the random slice and unlabelled" in res.stdout
