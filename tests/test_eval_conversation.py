"""The closed loop keeps a conversation: a failing follow-up turn, exported, replayed with its history.

The demo's policy assistant (public agent API) answers a question and then a follow-up about the
asker's own record (the agentic route, with its tool) through a real embedded collector (local
judge, chDB); its generator drops a condition from every answer, so both turns fail and the weekly
export writes them to an eval set. The follow-up's case keeps the conversation before it and where
each chunk came from (the retrieval's query, the tool's name and arguments), validated by the
eval-set schema. ``ragpulse eval --app`` then calls the app with that conversation: the demo's
replay function understands the follow-up only with it, so the replayed answer states the frozen
tool result; an app that takes no history is called with the turn alone, and the eval says so.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from ragpulse.agent import configure, flush, shutdown
from ragpulse.collector.cli import dispatch, evaluate
from ragpulse.collector.embedded.collector import EmbeddedCollector
from ragpulse.collector.eval.files import load_evalset
from ragpulse.collector.export.run import ExportOptions, run_export
from ragpulse.policy_rag import GenerationRates, PolicyAssistant, load_corpus
from ragpulse.policy_rag.records import training_record, training_sentence

FOLLOW_UP = "And when is mine due next?"
WRONG = GenerationRates(missing_condition=1.0, wrong_citation=0.0, hallucinated_number=0.0, false_refusal=0.0)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("loop")
    collector = EmbeddedCollector(base / "db", config={"sampling": {"rate": 1.0}}, metrics_port=None).start()
    configure(exporter="embedded", service_name="policy-chat", schedule_delay_ms=20)
    try:
        since = time.time_ns()
        corpus = load_corpus()
        app = PolicyAssistant(corpus, rates=WRONG)
        first = corpus.template("Q26").phrasings[0]
        said = app.answer(first, session_id="s-1", user_id="E-1042")
        history = [{"role": "user", "content": first}, {"role": "assistant", "content": said}]
        app.answer(FOLLOW_UP, history=history, session_id="s-1", user_id="E-1042")
        assert flush(10) and collector.flush(60)
        evalset = base / "evalset.jsonl"
        summary = run_export(collector.storage, ExportOptions(evalset, since, time.time_ns() + 10**9))
        assert summary.new_cases == 2
        yield {"base": base, "evalset": evalset, "history": history}
    finally:
        shutdown()
        collector.stop()


def test_the_exported_case_keeps_its_conversation_and_chunk_provenance(exported: dict) -> None:
    cases = {c["query"]: c for c in load_evalset(exported["evalset"])}  # validated by the schema
    follow = cases[FOLLOW_UP]["provenance"]
    assert follow["conversation"] == exported["history"]
    assert "conversation" not in cases[exported["history"][0]["content"]]["provenance"]  # a first turn
    tool = [c for c in follow["chunks"] if c.get("source_type") == "tool"]
    assert [(c["tool"], json.loads(c["query"])) for c in tool] == [
        ("training_record", {"employee_id": "E-1042"})
    ]
    assert json.loads(tool[0]["content"]) == training_record("E-1042")
    policy = load_corpus().template("Q26").phrasings[0]
    assert {c["query"] for c in follow["chunks"] if "source_type" not in c} == {policy}


def _replayed(exported: dict, app: str, tmp: Path) -> tuple[dict[str, dict], int]:
    run = tmp / f"{app.rsplit(':', 1)[1]}.jsonl"
    argv = ["eval", str(exported["evalset"]), "--app", app, "--corpus-from-snapshot", "--save-run", str(run),
            "--no-cache", "-q"]  # fmt: skip
    code = dispatch.run((evaluate,), argv)
    records = [json.loads(x) for x in run.read_text().splitlines()]
    return {r["query"]: r for r in records}, code


def test_eval_app_replays_a_case_with_its_conversation(
    exported: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs, code = _replayed(exported, "ragpulse.policy_rag.replay:careful", tmp_path)
    assert code == 0
    # Only the history tells the app that "mine" is the asker's training: the answer states the record.
    assert runs[FOLLOW_UP]["answer"].startswith(training_sentence(training_record("E-1042")))
    assert "without their conversation" not in capsys.readouterr().err
    runs, code = _replayed(exported, "tests.eval_apps:without_history", tmp_path)
    assert code == 0
    assert not runs[FOLLOW_UP]["answer"].startswith("Your security awareness training")
    assert "1 case(s) replayed without their conversation" in capsys.readouterr().err
