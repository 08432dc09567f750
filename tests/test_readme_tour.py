"""Every command in README.md runs, as written, in a test.

The README's shell commands and ``.venv/bin/...`` mentions are extracted and
must all be listed in :data:`EXERCISED`, which names the test that runs each.
The tests run the commands verbatim except for documented substitutions that
keep them from touching shared state on this machine: a temporary database and
report instead of ``ragpulse-data/``, free ports instead of 9466, the
session's Kafka broker instead of ``localhost:9092``, a ClickHouse-compatible
``chdb://`` DSN instead of a ClickHouse server, and unique topic and
consumer-group names on the shared broker. ``make`` runs with
``-o .venv/.installed`` so it uses the installed venv instead of reinstalling
it under the other tests.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.chdb_rows import stored_rows
from tests.services import ROOT, KafkaBroker, free_port, reaped, wait_for_line

README = ROOT / "README.md"
VENV_BIN = Path(sys.executable).parent
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}
MAKE_NO_INSTALL = ["make", "-o", ".venv/.installed"]

EXERCISED = {
    "make demo": "test_make_demo",
    "make test": "test_make_test_runs_this_suite",
    "make interop": "test_make_interop_builds_the_otel_collector_and_runs_its_tests",
    'make demo DEMO_ARGS="--serve"': "test_make_demo_serve",
    ".venv/bin/ragpulse demo --help": "test_demo_help",
    "RAGPULSE_STORAGE__DSN=chdb://$PWD/ragpulse-data/mine .venv/bin/ragpulse collect --no-kafka": (
        "test_instrument_over_otlp_without_kafka"
    ),
    "RAGPULSE_EXPORTER=otlp RAGPULSE_OTLP_ENDPOINT=http://localhost:4320 .venv/bin/python my_rag.py": (
        "test_instrument_over_otlp_without_kafka"
    ),
    "RAGPULSE_EXPORTER=kafka RAGPULSE_KAFKA_BOOTSTRAP_SERVERS=localhost:9092 .venv/bin/python my_rag.py": (
        "test_instrument_collect_and_read_metrics"
    ),
    "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS=localhost:9092 RAGPULSE_STORAGE__DSN=http://default:@localhost:8123/ragpulse "
    ".venv/bin/ragpulse collect": "test_instrument_collect_and_read_metrics",
    "curl -s localhost:9466/metrics | grep -E '^ragpulse_(traces_judged_total|faithfulness_count|failure_modes_total)'": (
        "test_instrument_collect_and_read_metrics"
    ),
    ".venv/bin/ragpulse judge examples/worked_example.jsonl -o judged.jsonl": "test_judge_jsonl_offline",
    ".venv/bin/ragpulse eval examples/worked_example/evalset.jsonl examples/worked_example/run.jsonl -o eval.html": (
        "test_eval_and_gate"
    ),
    ".venv/bin/python -m ragpulse.policy_rag.evalset policy.jsonl": "test_eval_and_gate",
    ".venv/bin/ragpulse eval policy.jsonl --app ragpulse.policy_rag.replay:sloppy --corpus-from-snapshot "
    "--gate examples/policy_rag/gates.yaml": "test_eval_and_gate",
}


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(), re.S | re.M)


def readme_commands() -> list[str]:
    """Shell commands of the README: bash block lines and inline ``.venv/bin/...`` commands."""
    cmds = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                cmds.append(line)
    text = re.sub(r"^```.*?^```", "", README.read_text(), flags=re.S | re.M)
    cmds += [m for m in re.findall(r"`([^`\n]+)`", text) if m.startswith((".venv/bin/", "make "))]
    return cmds


def readme_command(test: str) -> list[str]:
    return [c for c, t in EXERCISED.items() if t == test]


def test_every_readme_command_is_exercised() -> None:
    cmds = readme_commands()
    assert set(cmds) == set(EXERCISED), set(cmds) ^ set(EXERCISED)
    names = set(globals())
    assert all(t in names for t in EXERCISED.values())
    # the two commands come first
    assert _blocks("bash")[0].split("\n")[:2] == [
        "make demo   # creates .venv, installs, runs the whole loop on the embedded default",
        "make test   # installs, provisions the real services (Kafka, Prometheus, helm), runs the suite",
    ]


def test_readme_links_resolve() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", README.read_text())
    assert links
    for link in links:
        if not link.startswith(("http://", "https://")):
            assert (ROOT / link).exists(), link


def _demo_args(tmp: Path, *extra: str) -> str:
    return " ".join(["--queries 40 --rate 0", f"--db {tmp / 'chdb'}", *extra])


def test_make_demo(tmp_path: Path) -> None:
    (cmd,) = [c for c in readme_command("test_make_demo") if c == "make demo"]
    argv = [*MAKE_NO_INSTALL, *shlex.split(cmd)[1:], f"DEMO_ARGS={_demo_args(tmp_path, '--metrics-port 0')}"]
    res = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=180, env=ENV)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "ragpulse quality report" in res.stdout and "agreement:" in res.stdout
    assert (tmp_path / "report.html").is_file() and (tmp_path / "chdb").is_dir()
    assert f"HTML report:      {tmp_path / 'report.html'}" in res.stdout


def test_make_demo_serve(tmp_path: Path) -> None:
    (cmd,) = readme_command("test_make_demo_serve")
    argv = shlex.split(cmd)
    port = free_port()
    assert argv == ["make", "demo", "DEMO_ARGS=--serve"]
    argv = [*MAKE_NO_INSTALL, "demo", f"{argv[2]} {_demo_args(tmp_path, f'--metrics-port {port}')}"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV,
                            start_new_session=True)  # fmt: skip
    seen = ""
    try:
        seen = wait_for_line(proc, "Serving metrics at", 120)
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        assert "ragpulse_traces_judged_total{" in body
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in the terminal reaches make and ragpulse
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "Stopped." in rest, seen + rest


def test_make_test_runs_this_suite() -> None:
    """`make test` is how this suite is run; check what it runs without recursing into it."""
    res = subprocess.run(
        [*MAKE_NO_INSTALL, "-n", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert "scripts/provision.sh all" in res.stdout and "-m pytest" in res.stdout


def test_make_interop_builds_the_otel_collector_and_runs_its_tests() -> None:
    """`make interop` provisions the OTel Collector and runs its tests (the build is minutes cold,
    so it is checked without running it; with the binary cached the suite runs those tests)."""
    res = subprocess.run(
        [*MAKE_NO_INSTALL, "-n", "interop"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert "scripts/provision.sh otelcol" in res.stdout
    assert "-m pytest" in res.stdout and "tests/test_otelcol_interop.py" in res.stdout


def test_demo_help() -> None:
    (cmd,) = readme_command("test_demo_help")
    res = subprocess.run(shlex.split(cmd), cwd=ROOT, capture_output=True, text=True, timeout=60, env=ENV)
    assert res.returncode == 0
    for option in ("--queries", "--db", "--rate", "--sample-rate", "--metrics-port", "--judge", "--serve"):
        assert option in res.stdout


def test_judge_jsonl_offline(tmp_path: Path) -> None:
    (cmd,) = readme_command("test_judge_jsonl_offline")
    argv = shlex.split(cmd)
    argv[argv.index("-o") + 1] = str(tmp_path / "judged.jsonl")
    res = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, env=ENV)
    assert res.returncode == 0, res.stderr[-2000:]
    out = {
        r["trace_id"][-1]: r for r in map(json.loads, (tmp_path / "judged.jsonl").read_text().splitlines())
    }
    assert {k: (r["failure_mode"], r["abstention_kind"]) for k, r in out.items()} == {
        "A": ("retrieval", None),
        "B": ("generation", None),
        "C": ("healthy", None),
        "D": ("abstain", "appropriate"),
    }
    assert out["C"]["citation_correctness"] == 1.0


def test_eval_and_gate(tmp_path: Path) -> None:
    """Substitutions: outputs (eval.html, policy.jsonl) and the judgment cache go to a temporary folder."""
    env = {**ENV, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    outputs = {"eval.html": str(tmp_path / "eval.html"), "policy.jsonl": str(tmp_path / "policy.jsonl")}
    results = []
    for cmd in readme_command("test_eval_and_gate"):
        argv = [outputs.get(a, a) for a in shlex.split(cmd)]
        results.append(subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env))
    report, build, gate = results
    assert report.returncode == 0 and build.returncode == 0, report.stderr[-2000:] + build.stderr[-2000:]
    assert "strict_pass" in report.stdout and (tmp_path / "eval.html").is_file()
    assert len((tmp_path / "policy.jsonl").read_text().splitlines()) == 83
    assert gate.returncode == 1, gate.stderr[-2000:]
    assert [line for line in gate.stderr.splitlines() if line.startswith("GATE FAILED")]


_PROMTOOL_RULES = """groups:
- name: readme
  rules:
{rules}
"""


@pytest.mark.services
def test_readme_promql_is_valid(promtool: str, tmp_path: Path) -> None:
    (block,) = _blocks("promql")
    exprs = [line.strip() for line in block.splitlines() if line.strip()]
    assert len(exprs) == 2
    rules = "\n".join(f"  - record: readme:expr{i}\n    expr: {json.dumps(e)}" for i, e in enumerate(exprs))
    path = tmp_path / "rules.yml"
    path.write_text(_PROMTOOL_RULES.format(rules=rules))
    res = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def _env_of(cmd: str) -> tuple[dict[str, str], list[str]]:
    """Split ``A=1 B=2 prog args`` into ({A: 1, B: 2}, [prog, args])."""
    words = shlex.split(cmd)
    env = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    return env, words


def test_instrument_over_otlp_without_kafka(tmp_path: Path) -> None:
    """Tour step 2 without Kafka: ``ragpulse collect --no-kafka`` and the copy-paste app over OTLP/HTTP.
    Substitutions: free ports for the receiver (4320) and the metrics (9466); ``$PWD`` (the shell
    expands it) is a temporary folder."""
    collect_cmd, app_cmd = readme_command("test_instrument_over_otlp_without_kafka")
    (example,) = _blocks("python")
    (tmp_path / "my_rag.py").write_text(example)
    env, argv = _env_of(collect_cmd)
    assert env["RAGPULSE_STORAGE__DSN"] == "chdb://$PWD/ragpulse-data/mine"
    env["RAGPULSE_STORAGE__DSN"] = env["RAGPULSE_STORAGE__DSN"].replace("$PWD", str(tmp_path))
    port = free_port()
    env.update(RAGPULSE_RECEIVER__PORT=str(port), RAGPULSE_METRICS__PORT="0", RAGPULSE_SAMPLING__RATE="1.0")
    argv[0] = str(ROOT / argv[0])
    log = tmp_path / "collect.log"
    with log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, text=True,
                                env={**ENV, **env}, start_new_session=True)  # fmt: skip
    with reaped(proc):
        deadline = time.monotonic() + 90
        while "collecting on" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert f"collecting on http://127.0.0.1:{port}/v1/traces" in log.read_text(), log.read_text()[-3000:]
        app_env, app_argv = _env_of(app_cmd)
        assert app_env == {"RAGPULSE_EXPORTER": "otlp", "RAGPULSE_OTLP_ENDPOINT": "http://localhost:4320"}
        app_env["RAGPULSE_OTLP_ENDPOINT"] = f"http://localhost:{port}"
        app_argv[0] = str(ROOT / app_argv[0])
        res = subprocess.run(app_argv, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                             env={**ENV, **app_env})  # fmt: skip
        assert res.returncode == 0, res.stderr[-2000:]
        assert "Failed to export" not in res.stderr, res.stderr[-2000:]  # what the OTel exporter logs
        assert res.stdout.strip().endswith("five years from transaction completion [1].")
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the collector writes what it holds and exits
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    db = tmp_path / "ragpulse-data" / "mine"
    (trace,) = stored_rows(
        db,
        "SELECT service, query, chunk_ids, citation_doc_ids FROM ragpulse.rag_traces FINAL",
        timeout=60,
    )
    assert trace == [
        "my-rag",
        "How long do covered institutions retain transaction logs?",
        ["C1", "C2"],
        ["C1"],
    ]
    (judgment,) = stored_rows(
        db, "SELECT failure_mode, faithfulness FROM ragpulse.rag_judgments FINAL", timeout=60
    )
    assert judgment == ["healthy", 1.0]


@pytest.mark.services
def test_instrument_collect_and_read_metrics(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    """Tour steps 2-4: the copy-paste app sends to Kafka, `ragpulse collect` stores and judges, metrics show it."""
    app_cmd, collect_cmd, curl_cmd = readme_command("test_instrument_collect_and_read_metrics")
    (example,) = _blocks("python")
    (tmp_path / "my_rag.py").write_text(example)
    suffix = uuid.uuid4().hex[:8]
    spans_topic, judge_topic, dead_topic = (f"readme-{n}-{suffix}" for n in ("spans", "judge", "dead"))
    for t in (spans_topic, judge_topic, dead_topic):
        kafka_broker.create_topic(t, partitions=2)

    # step 2: the instrumented app, spans to Kafka
    env, argv = _env_of(app_cmd)
    assert env == {"RAGPULSE_EXPORTER": "kafka", "RAGPULSE_KAFKA_BOOTSTRAP_SERVERS": "localhost:9092"}
    env["RAGPULSE_KAFKA_BOOTSTRAP_SERVERS"] = kafka_broker.bootstrap
    env["RAGPULSE_KAFKA_TOPIC"] = spans_topic  # isolation on the shared broker
    argv[0] = str(ROOT / argv[0])
    res = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60, env={**ENV, **env})
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == (
        "Covered institutions retain transaction logs for five years from transaction completion [1]."
    )

    # step 3: the collector against Kafka, storing into ClickHouse (chDB here: no server on this machine)
    env, argv = _env_of(collect_cmd)
    assert env["RAGPULSE_KAFKA__BOOTSTRAP_SERVERS"] == "localhost:9092"
    assert env["RAGPULSE_STORAGE__DSN"].startswith("http://")
    db, port = tmp_path / "chdb", free_port()
    env.update(
        RAGPULSE_KAFKA__BOOTSTRAP_SERVERS=kafka_broker.bootstrap,
        RAGPULSE_STORAGE__DSN=f"chdb://{db}",
        RAGPULSE_METRICS__PORT=str(port),
        RAGPULSE_KAFKA__SPANS_TOPIC=spans_topic,
        RAGPULSE_KAFKA__JUDGE_TOPIC=judge_topic,
        RAGPULSE_KAFKA__DEADLETTER_TOPIC=dead_topic,
        RAGPULSE_KAFKA__GROUP_ID=f"readme-{suffix}",
        RAGPULSE_KAFKA__JUDGE_GROUP_ID=f"readme-judge-{suffix}",
        RAGPULSE_SAMPLING__RATE="1.0",
    )
    argv[0] = str(ROOT / argv[0])
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**ENV, **env})  # fmt: skip
    with reaped(proc):
        # step 4: read the metrics with the README's curl line (port substituted)
        metrics = ""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            res = subprocess.run(
                ["bash", "-c", curl_cmd.replace("localhost:9466", f"127.0.0.1:{port}")],
                capture_output=True,
                text=True,
                timeout=30,
            )
            metrics = res.stdout
            if re.search(r'^ragpulse_traces_judged_total\{[^}]*service="my-rag"[^}]*\} 1\.0$', metrics, re.M):
                break
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            time.sleep(0.5)
        assert re.search(
            r'^ragpulse_traces_judged_total\{[^}]*service="my-rag"[^}]*\} 1\.0$', metrics, re.M
        ), metrics
        assert re.search(r'^ragpulse_failure_modes_total\{[^}]*mode="healthy"[^}]*service="my-rag"[^}]*\} 1\.0$',
                         metrics, re.M) or 'mode="healthy"' in metrics  # fmt: skip
        assert re.search(r"^ragpulse_faithfulness_count\{", metrics, re.M)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out[-3000:]
    (trace,) = stored_rows(
        db,
        "SELECT service, query, answer, chunk_ids, citation_doc_ids FROM ragpulse.rag_traces FINAL",
        timeout=60,
    )
    assert trace[0] == "my-rag" and trace[1] == "How long do covered institutions retain transaction logs?"
    assert trace[3] == ["C1", "C2"] and trace[4] == ["C1"]
    (judgment,) = stored_rows(
        db, "SELECT failure_mode, faithfulness FROM ragpulse.rag_judgments FINAL", timeout=60
    )
    assert judgment == ["healthy", 1.0]
