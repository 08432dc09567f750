"""``ragpulse compare`` against real demo traffic, and its statistics.

One real run: ``ragpulse demo --variants`` serves 4,000 questions split 50/50 between two
generators whose rates of hallucinated numbers differ by a known amount (demo/variants.py),
through the embedded collector (sampler at rate 1, local judge, chDB). ``ragpulse compare`` must
find the worse one with an interval that excludes zero, and its generation-failure difference must
cover the difference of the injected failures (the truth ledger). The identical-generator case is
run on resampled stored rows: generator-a's judged traces split at random into two halves, 300
seeded times; the verdict must be "not established" in at least 95% (the issue's 19 of 20, see
the test). The paired path (shadow
traffic) and the CLI's errors are checked on their own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ragpulse.collector.compare.stats import METRICS, difference, metric_by_name
from ragpulse.collector.demo.variants import HALLUCINATION_GAP, PRICES

from tests.test_demo_run import ENV, RAGPULSE, db_query, run_demo

SERVICE = "policy-assistant"

_AA_SCRIPT = r"""
import json, sys
import numpy as np
from ragpulse.collector.compare.load import load_judged, pick_judge
from ragpulse.collector.compare.stats import difference, metric_by_name
from ragpulse.collector.storage.clickhouse import Storage

st = Storage("chdb://" + sys.argv[1])
judge = pick_judge(st.query, "policy-assistant", 0)
rows = load_judged(st.query, "policy-assistant", 0, judge, ["generator-a"], 100000)["generator-a"]
st.close()
metric = metric_by_name("faithfulness")
# Sorted first: the rows come in trace-id hash order and trace ids are random per run; the values
# are the seeded demo's, so the splits below are the same on every run.
values = np.sort(rows.values[metric.name])
verdicts = []
for seed in range(int(sys.argv[2])):
    order = np.random.default_rng(seed).permutation(len(values))
    half = len(values) // 2
    d = difference(metric, values[order[:half]], values[order[half:]], seed=seed)
    verdicts.append([d.verdict, d.delta, list(d.ci)])
print(json.dumps({"n": len(values), "verdicts": verdicts}))
"""


@pytest.fixture(scope="module")
def variants_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("variants") / "chdb"
    run = run_demo(
        "--variants", "--no-eval", "--queries", "4000", "--rate", "0", "--sample-rate", "1.0", "--budget-per-minute", "0",
        "--db", str(db),
        "--metrics-port", "0", "--no-color", timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "verdict on faithfulness" in run.stdout and (db.parent / "compare.html").exists()
    return db


def _compare(db: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RAGPULSE, "compare", "--service", SERVICE, "--db", str(db), "--json", str(out / "c.json"),
         "--html", str(out / "c.html"), *args],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip


def test_compare_finds_the_worse_generator_with_an_interval_excluding_zero(
    variants_db: Path, tmp_path: Path
) -> None:
    run = _compare(variants_db, tmp_path, "--variants", "generator-a", "generator-b", "--since", "24h")
    assert run.returncode == 0, run.stderr
    assert "different queries: unpaired bootstrap" in run.stdout
    assert "generator-b is worse than generator-a" in run.stdout
    cmp = json.loads((tmp_path / "c.json").read_text())
    assert cmp["baseline"] == "generator-a"
    n = {v["variant"]: v["judged"] for v in cmp["variants"]}
    assert sum(n.values()) == 4000 and min(n.values()) > 1800  # every question judged, split ~50/50
    diff = cmp["differences"]["generator-b"]
    faith = diff["faithfulness"]
    assert faith["verdict"] == "worse" and faith["ci"][1] < 0 and not faith["paired"]
    # The judge's generation-failure difference covers the injected one (the truth ledger).
    truth = db_query(variants_db, {"t": (
        "SELECT t.variant, avg(i.expected_failure_mode = 'generation'), avg(i.injected_mode = 'hallucinated_number') "
        "FROM (SELECT * FROM ragpulse.demo_injections FINAL) i "
        "INNER JOIN (SELECT trace_id, variant FROM ragpulse.rag_traces FINAL) t ON t.trace_id = i.trace_id "
        "GROUP BY t.variant ORDER BY t.variant")})["t"]  # fmt: skip
    (_, gen_a, hal_a), (_, gen_b, hal_b) = truth
    assert HALLUCINATION_GAP / 2 < hal_b - hal_a < HALLUCINATION_GAP * 1.5
    lo, hi = diff["failure_mode:generation"]["ci"]
    assert lo <= gen_b - gen_a <= hi and lo > 0
    assert diff["failure_mode:generation"]["verdict"] == "worse"


def test_cost_per_query_is_tokens_times_the_configured_prices(variants_db: Path, tmp_path: Path) -> None:
    run = _compare(variants_db, tmp_path, "--variants", "generator-a", "generator-b")
    assert run.returncode == 0, run.stderr
    cmp = json.loads((tmp_path / "c.json").read_text())
    rows = db_query(variants_db, {"t": (
        "SELECT variant, model, avg(input_tokens), avg(output_tokens), count(), count(generation_cost_usd) "
        "FROM ragpulse.rag_traces FINAL GROUP BY variant, model ORDER BY variant")})["t"]  # fmt: skip
    for variant, model, tin, tout, n, priced in rows:
        served = next(v["served"] for v in cmp["variants"] if v["variant"] == variant)
        p = PRICES[model]
        want = (tin * p["input_per_million"] + tout * p["output_per_million"]) / 1e6
        assert served["cost_per_query"] == pytest.approx(want, rel=1e-9) and tin > 0 and tout > 0
        assert served["priced"] == priced == served["traces"] == n
        assert set(served["latency_ms"]) == {"retrieval", "generation", "total"}  # no reranker ran
    html = (tmp_path / "c.html").read_text()
    assert "<svg" in html and "cost-quality frontier" in html and "generator-b" in html
    assert "http" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")  # self-contained


def test_identical_generators_are_not_established_in_at_least_95_percent_of_repetitions(
    variants_db: Path,
) -> None:
    """The issue's "at least 19 of 20 seeded repetitions" is a false-positive rate of at most 5%, the
    rate a 95% interval has by construction: 20 repetitions meet it only about 74% of the time even
    when the intervals are exact (seeds 0-19 give 18 of 20 here). The same 95% is asserted over 300
    seeded repetitions, which estimate the rate closely enough to tell exact from too narrow."""
    run = subprocess.run(
        [sys.executable, "-c", _AA_SCRIPT, str(variants_db), "300"],
        capture_output=True, text=True, timeout=600, env=ENV,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    verdicts = [v[0] for v in out["verdicts"]]
    assert out["n"] > 1800 and len(verdicts) == 300
    assert verdicts.count("not established") >= 285, verdicts.count("not established")


def test_shadow_traffic_is_paired_on_the_request_id() -> None:
    """Both variants answer the same 200 requests; requests differ far more than the variants do.
    Unpaired, the small effect drowns in the between-request spread; paired, it is established."""
    rng = np.random.default_rng(3)
    difficulty = rng.uniform(0.2, 1.0, 200)
    base = np.clip(difficulty + rng.normal(0, 0.01, 200), 0, 1)
    cand = np.clip(difficulty - 0.02 + rng.normal(0, 0.01, 200), 0, 1)
    keys = [f"req-{i}" for i in range(200)]
    m = metric_by_name("faithfulness")
    unpaired = difference(m, cand, base)
    paired = difference(m, cand, base, cand_keys=keys, base_keys=keys)
    assert not unpaired.paired and unpaired.verdict == "not established"
    assert paired.paired and paired.n == 200 and paired.verdict == "worse" and paired.ci[1] < 0
    few = difference(m, cand, base, cand_keys=keys[:20] + [""] * 180, base_keys=keys)
    assert not few.paired  # fewer than MIN_PAIRS shared requests: unpaired
    assert {x.name for x in METRICS} >= {"faithfulness", "failure_mode:generation", "unsupported_answer"}


def test_bad_input_fails_with_one_line(variants_db: Path, tmp_path: Path) -> None:
    for args, reason in (
        (["--variants", "generator-a", "nope"], "no judged traces of variant(s) nope"),
        (["--variants", "generator-a", "generator-a"], "names a variant twice"),
        (["--metric", "speed"], "--metric must be one of"),
        (["--since", "yesterday"], "cannot read time"),
    ):
        run = _compare(variants_db, tmp_path, *args)
        assert run.returncode == 2 and reason in run.stderr, (args, run.stderr)
        assert len(run.stderr.strip().splitlines()) <= 2  # the progress line, then the one-line reason
    run = subprocess.run([*RAGPULSE, "compare", "--service", SERVICE, "--db", str(tmp_path / "none")],
                         capture_output=True, text=True, timeout=60, env=ENV)  # fmt: skip
    assert run.returncode == 2 and "no database at" in run.stderr
