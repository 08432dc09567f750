"""Fault: the ClickHouse (chDB) volume runs out of space mid-run, then space comes back.

The engine refuses by itself: the collector's chDB runs with a storage
configuration whose ``keep_free_space_bytes`` leaves a few GiB of headroom on
the test's filesystem, and the test takes that headroom away with a ballast
file (``posix_fallocate``: real blocks, allocated at once), so inserts fail
with ClickHouse's own ``NOT_ENOUGH_SPACE``. A real Prometheus scrapes the
collector and evaluates the shipped pipeline rules (``for`` shortened to 0s)
so the storage alert's state is read, not assumed. Deleting the ballast gives
the space back.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.monitoring.config import load_objectives
from ragpulse.collector.monitoring.rules import render_rules
from ragpulse.collector.storage.clickhouse import Storage

from tests.services import Prometheus
from tests.soak_run import scrape
from tests.test_collector_kafka import Setup, _produce_all, setup_factory  # noqa: F401 - the fixture

pytestmark = pytest.mark.services

HEADROOM = 3 << 30  # bytes chDB may use above keep_free_space_bytes when the test starts
BALLAST = HEADROOM + (5 << 30)  # more than the headroom, so other writers on the disk cannot undo it
ALERT = "RagpulseStorageUnavailable"


def _chdb_config(path: Path, keep_free: int) -> Path:
    path.write_text(
        "<clickhouse><storage_configuration><disks><default>"
        f"<keep_free_space_bytes>{keep_free}</keep_free_space_bytes>"
        "</default></disks></storage_configuration></clickhouse>\n"
    )
    return path


def _until(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(interval)
    raise AssertionError(f"{what}: not reached within {timeout:.0f}s")


def _alert_state(prom: Prometheus) -> str:
    with urllib.request.urlopen(f"{prom.url}/api/v1/alerts", timeout=5) as resp:
        alerts = json.loads(resp.read())["data"]["alerts"]
    states = {a["state"] for a in alerts if a["labels"]["alertname"] == ALERT}
    return "firing" if "firing" in states else "pending" if states else "inactive"


def _prometheus(tmp: Path, metrics_url: str) -> Prometheus:
    rules = tmp / "rules"
    rules.mkdir()
    name = "ragpulse-pipeline-alerts.yaml"
    objectives = load_objectives(overrides={"pipeline": {"storage_down": {"for": "0s"}}})
    (rules / name).write_text(render_rules(objectives)[name])
    return Prometheus(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files: ['{rules}/*.yaml']\n"
        "scrape_configs:\n  - job_name: ragpulse\n    static_configs:\n"
        f"      - targets: ['{metrics_url.removeprefix('http://')}']\n",
        workdir=tmp / "prom",
    ).start()


def test_disk_full_commits_nothing_unstored_and_resumes_without_loss_or_duplicates(
    setup_factory: Any,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    db = tmp_path / "full-chdb"
    keep_free = shutil.disk_usage(tmp_path).free - HEADROOM
    cfg = _chdb_config(tmp_path / "chdb.xml", keep_free)
    s: Setup = setup_factory(
        sampling={"rate": 0.0, "rules": []}, storage={"dsn": f"chdb://{db}?config-file={cfg}"}
    )
    traces = [make_trace(i, seed="disk-full", n_chunks=2, chunk_chars=60) for i in range(600)]
    records = [(t.hex.encode(), traces_data([(t.service, t.spans)])) for t in traces]
    _produce_all(s, records[:300])
    proc = s.collector()
    url = proc.wait_ready()
    s.wait_caught_up(proc, timeout=90)
    prom = _prometheus(tmp_path, url)
    ballast = tmp_path / "ballast"
    try:
        _until("Prometheus scraped storage up", lambda: _alert_state(prom) == "inactive" and scrape(url).get(
            "ragpulse_storage_up") == 1, 30)  # fmt: skip
        stored_before = s.committed()
        fd = os.open(ballast, os.O_CREAT | os.O_WRONLY, 0o600)
        try:
            os.posix_fallocate(fd, 0, BALLAST)
        finally:
            os.close(fd)
        _produce_all(s, records[300:])
        full = _until("storage down after the disk filled", lambda: (m := scrape(url)).get(
            "ragpulse_storage_up") == 0 and m.get("ragpulse_storage_retries_total", 0) >= 3 and m, 90)  # fmt: skip
        assert "NOT_ENOUGH_SPACE" in proc.log_tail(), proc.log_tail()
        assert _until("the storage alert firing", lambda: _alert_state(prom) == "firing", 30)
        assert proc.alive(), proc.log_tail()
        # Nothing past what was stored is committed while the disk is full.
        assert s.committed() == stored_before, (s.committed(), stored_before)
        assert full["ragpulse_traces_stored_total"] == 300
        ballast.unlink()
        s.wait_caught_up(proc, timeout=90)
        assert scrape(url)["ragpulse_storage_up"] == 1
        assert _until("the storage alert resolved", lambda: _alert_state(prom) == "inactive", 30)
    finally:
        prom.cleanup()
        ballast.unlink(missing_ok=True)
    rc, _took = proc.terminate()
    assert rc == 0, proc.log_tail()
    st = Storage(f"chdb://{db}")
    try:
        once = st.query("SELECT count(), uniqExact(trace_id) FROM {db}.rag_traces FINAL")[0]
        ids = {r[0] for r in st.query("SELECT trace_id FROM {db}.rag_traces FINAL")}
    finally:
        st.close()
    assert once == (600, 600)
    assert ids == {t.hex for t in traces}


_REFUSALS = 12  # inserts refused while the disk is full, each retried as the collector's loops do


def _outage_footprint(folder: str) -> None:
    """Child process (one chDB engine of its own): store a row, refuse _REFUSALS inserts on a full
    disk, store again; print the threads, descriptors and rows before and after as JSON."""
    from ragpulse.collector.storage.clickhouse import REVIEW_COLUMNS, StorageUnavailable

    tmp = Path(folder)
    cfg = _chdb_config(tmp / "chdb.xml", shutil.disk_usage(tmp).free - HEADROOM)
    st = Storage(f"chdb://{tmp / 'db'}?config-file={cfg}")
    st.apply_schema()

    def footprint() -> dict[str, int]:
        threads = int(Path("/proc/self/status").read_text().split("Threads:")[1].split()[0])
        return {"threads": threads, "fds": len(os.listdir("/proc/self/fd"))}

    def store(i: int) -> None:
        st.insert_reviews([{**dict.fromkeys(REVIEW_COLUMNS, ""), "trace_id": f"{i:032x}", "claim_index": -1,
                            "time": 0, "version": 1}])  # fmt: skip

    store(0)
    before = footprint()
    ballast = tmp / "ballast"
    fd = os.open(ballast, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        os.posix_fallocate(fd, 0, BALLAST)
    finally:
        os.close(fd)
    refused = []
    for _ in range(_REFUSALS):
        try:
            store(1)
        except StorageUnavailable as exc:
            refused.append("NOT_ENOUGH_SPACE" in str(exc))
    ballast.unlink()
    store(1)
    rows = st.query("SELECT count() FROM {db}.rag_reviews FINAL")[0][0]
    print(json.dumps({"before": before, "after": footprint(), "refused": refused, "rows": rows}))


def test_a_refused_insert_leaves_no_threads_or_descriptors_behind(tmp_path: Path) -> None:
    """A storage outage retried a dozen times: the in-process engine keeps its threads and opens
    no files for the refusals (before: each retry reopened the client, about 5 threads each,
    and the first refusal's stack trace opened every loaded shared object, ~134 descriptors)."""
    import subprocess
    import sys

    code = f"from tests.test_faults_storage import _outage_footprint; _outage_footprint({str(tmp_path)!r})"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parent.parent)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["refused"] == [True] * _REFUSALS and out["rows"] == 2, out  # ClickHouse refused, then stored
    assert out["after"]["threads"] - out["before"]["threads"] <= 2, out
    assert out["after"]["fds"] - out["before"]["fds"] <= 8, out
