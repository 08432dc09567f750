"""``ragpulse rejudge`` and ``ragpulse judge diff`` on a database the demo filled.

Re-judging writes one row per judged trace under the new judge id (the old rows stay), a
second run adds none, a run stopped by ``--limit`` or interrupted mid-batch resumes where it
stopped, and the diff's per-score movements, flag rates and class changes equal what the
stored rows say when counted here directly. A stored trace reads back as the trace the
collector stored (the judge gets the same message).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.contract import SCORE_NAMES

from tests.rag_cases import store_rag_cases
from tests.review_server import ragpulse

WEIGHTS = Path(__file__).resolve().parents[1] / "collector" / "judge" / "local" / "weights" / "claim-v4.json"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo database of 120 questions, every one judged by the local judge."""
    base = tmp_path_factory.mktemp("rejudge")
    db = base / "chdb"
    res = ragpulse("demo", "--queries", "120", "--rate", "0", "--db", str(db), "--metrics-port", "0",
                   "--no-eval", "--sample-rate", "1", "--report", str(base / "report.html"))  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return db


def _copy(db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "chdb"
    shutil.copytree(db, target, symlinks=True)  # the database links its tables into store/, relatively
    return target


def _weights(tmp_path: Path, threshold: float) -> Path:
    """The packaged claim head with another verdict threshold: a judge with another id."""
    data = json.loads(WEIGHTS.read_text())
    data["threshold"] = threshold
    path = tmp_path / f"claim-{threshold}.json"
    path.write_text(json.dumps(data))
    return path


def _counts(db: Path, judge: str) -> dict[str, int]:
    """Rows under ``judge``: judgments and claims, as stored (every insert) and as read (FINAL)."""
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn=f"chdb://{db}")
    try:
        out = {}
        for table in ("rag_judgments", "rag_claims"):
            for final in ("", " FINAL"):
                q = f"SELECT count() FROM ragpulse.{table}{final} WHERE judge_id = %(j)s"
                out[table + final.lower().replace(" ", "_")] = int(
                    client.query(q, {"j": judge}).result_rows[0][0]
                )
        q = "SELECT judge_id, count() FROM ragpulse.rag_judgments FINAL WHERE error = '' GROUP BY judge_id"
        out.update({f"judged:{j}": int(n) for j, n in client.query(q).result_rows})
        return out
    finally:
        client.close()


def _rejudged(stdout: str) -> tuple[int, int, str]:
    m = re.search(r"rejudged (\d+) traces as (\S+) \(\d+ errors\)(?:; (\d+) left|; none left)", stdout)
    assert m, stdout
    return int(m.group(1)), int(m.group(3) or 0), m.group(2)


def test_rejudge_gives_every_judged_trace_one_row_under_the_new_id_and_resumes(
    demo_db: Path, tmp_path: Path
) -> None:
    db = _copy(demo_db, tmp_path)
    weights = _weights(tmp_path, 0.6)
    args = ["rejudge", "--db", str(db), "--claim-weights", str(weights)]

    first = ragpulse(*args, "--limit", "50")
    assert first.returncode == 0, first.stderr
    judged, left, new_id = _rejudged(first.stdout)
    before = _counts(db, new_id)
    base_id, total = next(
        (k[7:], n) for k, n in before.items() if k.startswith("judged:") and k[7:] != new_id
    )
    assert judged == 50 and left == total - 50 and before["rag_judgments"] == 50
    assert "ragpulse rejudge" in first.stderr and "50/50" in first.stderr  # the progress bar

    second = ragpulse(*args)  # resumes: only the traces the first run did not reach
    assert second.returncode == 0, second.stderr
    assert _rejudged(second.stdout) == (total - 50, 0, new_id)
    after = _counts(db, new_id)
    assert after["rag_judgments"] == after["rag_judgments_final"] == total == after[f"judged:{new_id}"]
    assert after[f"judged:{base_id}"] == total  # the old judge's rows stay
    assert after["rag_claims"] == after["rag_claims_final"] == _counts(db, base_id)["rag_claims_final"] > 0

    third = ragpulse(*args)  # idempotent: nothing left, nothing inserted
    assert third.returncode == 0, third.stderr
    assert _rejudged(third.stdout) == (0, 0, new_id)
    assert _counts(db, new_id) == after

    diff = ragpulse("judge", "diff", "--db", str(db), "--from", base_id, "--to", new_id)
    assert diff.returncode == 0, diff.stderr
    assert f"judge diff: {base_id} -> {new_id} on {total} traces both judged" in diff.stdout
    for name in ("faithfulness", "unsupported_claims", "hallucinated_answers", "failure mode"):
        assert name in diff.stdout
    none = ragpulse("judge", "diff", "--db", str(db), "--from", base_id, "--to", "local-0:none")
    assert none.returncode == 2 and "no trace judged by both" in none.stderr
    same = ragpulse("rejudge", "--db", str(db), "--from", new_id, "--claim-weights", str(weights))
    assert same.returncode == 2 and "is the judge that scored these traces" in same.stderr


class _Interrupted:
    """The real local judge, interrupted (Ctrl-C) while judging its ``stop_after``-th trace."""

    def __init__(self, judge: Any, stop_after: int) -> None:
        self.inner, self.stop_after, self.calls = judge, stop_after, 0
        self.judge_id = judge.judge_id

    def judge(self, record: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls == self.stop_after:
            raise KeyboardInterrupt
        return self.inner.judge(record)


def test_an_interrupted_run_resumes_where_it_stopped(demo_db: Path, tmp_path: Path) -> None:
    from ragpulse.collector.judge import get_judge
    from ragpulse.collector.rejudge.run import RejudgeScope, base_judge, pending_count, rejudge
    from ragpulse.collector.storage.clickhouse import Storage

    storage = Storage(f"chdb://{_copy(demo_db, tmp_path)}")
    try:
        judge = get_judge("local", require_citations=True)  # another judge id
        base = base_judge(storage)
        assert base is not None and base != judge.judge_id
        scope = RejudgeScope(base, judge.judge_id)
        total = pending_count(storage, scope)
        with pytest.raises(KeyboardInterrupt):  # in the third batch of 16: two batches stored
            rejudge(storage, _Interrupted(judge, 40), scope, limit=total, batch=16)
        assert pending_count(storage, scope) == total - 32
        done: list[int] = []
        outcome = rejudge(storage, judge, scope, limit=total, batch=16, progress=done.append)
        assert (outcome.judged, outcome.left, sum(done)) == (total - 32, 0, total - 32)
        rows = storage.query(
            "SELECT count(), uniqExact(trace_id) FROM {db}.rag_judgments WHERE judge_id = %(j)s",
            {"j": judge.judge_id},
        )
        assert rows[0] == (total, total)  # every trace once: nothing judged twice
    finally:
        storage.close()


def _pairs(storage: Any, a: str, b: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    cols = ", ".join(SCORE_NAMES)
    sql = (
        f"SELECT trace_id, {cols}, failure_mode, JSONExtractString(extra, 'response_verdict'), claims_total, "
        "claims_unsupported + claims_contradicted FROM {db}.rag_judgments FINAL WHERE judge_id = %(j)s AND error = ''"
    )
    side = []
    for judge in (a, b):
        rows = {}
        for r in storage.query(sql, {"j": judge}):
            rec = dict(zip(SCORE_NAMES, r[1 : 1 + len(SCORE_NAMES)], strict=True))
            rec.update(mode=r[-4], verdict=r[-3], claims=r[-2], bad=r[-1])
            rows[r[0]] = rec
        side.append(rows)
    return [(side[0][t], side[1][t]) for t in side[0] if t in side[1]]


def test_the_diff_counts_each_movement_the_stored_rows_show(chdb_storage: Any, tmp_path: Path) -> None:
    """The packaged judge and one with another claim threshold on the hand-written RAG cases:
    scores, flags and classes move; the diff's figures equal the rows' when counted here."""
    import io

    from ragpulse.collector.cli.judge_diff import print_diff
    from ragpulse.collector.judge import get_judge
    from ragpulse.collector.rejudge.diff import DiffScope, judge_diff
    from ragpulse.collector.rejudge.run import RejudgeScope, rejudge

    base = store_rag_cases(chdb_storage)
    judge = get_judge("local", claim_weights=str(_weights(tmp_path, 0.7)))
    outcome = rejudge(chdb_storage, judge, RejudgeScope(base, judge.judge_id), limit=10_000)
    diff = judge_diff(chdb_storage, DiffScope(base, judge.judge_id))
    pairs = _pairs(chdb_storage, base, judge.judge_id)
    assert diff["traces"] == len(pairs) == outcome.judged > 0
    for s in SCORE_NAMES:
        both = [(a[s], b[s]) for a, b in pairs if a[s] is not None and b[s] is not None]
        got = diff["scores"][s]
        up, down = sum(1 for x, y in both if y > x + 1e-9), sum(1 for x, y in both if y < x - 1e-9)
        assert (got["n"], got["up"], got["down"], got["same"]) == (
            len(both),
            up,
            down,
            len(both) - up - down,
        ), s
        if both:
            assert got["from"] == pytest.approx(sum(x for x, _ in both) / len(both), abs=1e-4)
            assert got["to"] == pytest.approx(sum(y for _, y in both) / len(both), abs=1e-4)
    faith = diff["scores"]["faithfulness"]
    assert faith["up"] + faith["down"] > 0
    for cls, key in (("failure_mode", "mode"), ("response_verdict", "verdict")):
        changed: dict[tuple[str, str], int] = {}
        for a, b in pairs:
            if a[key] != b[key]:
                pair = (a[key] or "none", b[key] or "none")
                changed[pair] = changed.get(pair, 0) + 1
        assert (
            changed
            and {(m["from"], m["to"]): m["traces"] for m in diff["classes"][cls]["changed"]} == changed
        )
    for k, side in ((0, "from"), (1, "to")):
        claims = sum(p[k]["claims"] for p in pairs)
        assert diff["flags"]["unsupported_claims"][side] == pytest.approx(
            sum(p[k]["bad"] for p in pairs) / claims, abs=1e-4
        )
        hallucinated = sum(1 for p in pairs if p[k]["verdict"] == "hallucinated")
        assert diff["flags"]["hallucinated_answers"][side] == pytest.approx(
            hallucinated / len(pairs), abs=1e-4
        )
    out = io.StringIO()
    print_diff(diff, out)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("faithfulness"))
    assert line.split()[-3:] == [str(faith["up"]), str(faith["down"]), str(faith["same"])]


def test_a_stored_trace_reads_back_as_the_collector_stored_it(chdb_storage: Any) -> None:
    from ragpulse.collector.core.model import Chunk, Citation, Message, RagTrace
    from ragpulse.collector.storage.stored_traces import read_traces

    t = RagTrace("ab" * 16)
    t.root_span_id, t.time, t.end_time, t.service, t.variant = (
        "cd" * 8,
        1_790_000_000_123_456_789,
        1_790_000_001_000_000_001,
        "svc",
        "v2",
    )
    t.query, t.answer, t.model, t.span_count, t.sampled_reason = "q?", "a [1].", "m", 5, "rule:refusal"
    t.attributes = {"rag.tenant": "acme", "n": 3}
    t.generation_cost_usd, t.complete, t.sampled = 0.0012, True, True
    t.chunks = [
        Chunk("d1", "first text", 0.9, json.dumps({"title": "T"})),
        Chunk("d1#2", "tool output", None, "", source="d1", source_type="tool", tool="search", query="x=1"),
    ]
    t.citations = [Citation("d1", "[1]", 2, 5)]
    t.conversation = [Message("user", "earlier question"), Message("assistant", "earlier answer")]
    chdb_storage.insert_traces([t])
    back = read_traces(chdb_storage, [t.trace_id, "ef" * 16])
    assert list(back) == [t.trace_id]
    assert back[t.trace_id].judge_message() == t.judge_message()
    for name in ("generation_cost_usd", "complete", "sampled"):
        assert getattr(back[t.trace_id], name) == getattr(t, name)
