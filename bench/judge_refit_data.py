"""The development sets with real answers as "a team's labels": traces and labels, read once.

Each set becomes what a team would hand ``ragpulse judge refit --labels FILE --traces FILE``:
judge input records (one per answer) and, per trace, claim labels, the trace label and the
cross-validation group the set's README asks for:

- ``mtrag``: one trace per rated response (the three responses to a task share its query and
  passages), trace label from the human faithfulness ratings, no claim labels; grouped by
  conversation (20 conversations).
- ``factscore``: one trace per biography (the Wikipedia article's sections as chunks), the
  human atomic facts as claim labels, the trace label "faithful" when every fact is supported;
  grouped by person (bios of one person share the article).
- ``factcheck-gpt``: one trace per ChatGPT response, its chunks every passage retrieved for any
  of its claims (ids prefixed by the claim), the annotated claims as claim labels (supported,
  else not), faithful when every claim is supported; grouped by response.
- ``rag-dev``, ``rag-check``: the hand-written RAG cases, two traces per case (the faithful
  answer and its hallucinated version), trace labels only; grouped by case.
- ``summaries``: the hand-written summary cases, four traces per case (faithful and
  hallucinated summary, the article whole and split into paragraphs), trace labels only;
  grouped by case.

:func:`label_sets` reads every trace with the packaged judge's pair model
(:func:`ragpulse.collector.judge.local.refit.data.read_labels`, the judge's own code) and
caches the arrays under ``.cache/judge-refit/``, keyed by the judge's source and the data.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import judge_rag_answers as rag
import judge_summaries as summaries
from judge_dev_data import DATA, ROOT
from ragpulse.collector import judge as judge_package
from ragpulse.collector.judge.local.refit.data import LabelSet, TraceLabels, read_labels
from ragpulse.collector.judge.local.support import load_model

__all__ = ["SETS", "IN_REPO", "Team", "label_sets", "team_labels", "joined_team"]

SETS: tuple[str, ...] = ("mtrag", "factscore", "factcheck-gpt", "rag-dev", "rag-check", "summaries")
#: The sets kept in this repository (bench/*.json), which the tests may read.
IN_REPO: tuple[str, ...] = ("rag-dev", "rag-check", "summaries")
CACHE = ROOT / ".cache" / "judge-refit"

Team = tuple[dict[str, dict[str, Any]], list[TraceLabels]]


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _mtrag(data: Path) -> Team:
    traces, labels = {}, []
    for r in _jsonl(data / "judge-dev" / "mtrag.jsonl"):
        if r["hallucinated"] is None:
            continue
        traces[r["id"]] = {"query": r["query"], "answer": r["answer"], "chunks": r["chunks"]}
        labels.append(TraceLabels(r["id"], (), not r["hallucinated"], r["conversation_id"]))
    return traces, labels


def _supported(label: str) -> int:
    return 1 if label == "supported" else 0


def _factscore(data: Path) -> Team:
    traces, labels = {}, []
    for r in _jsonl(data / "judge-dev" / "factscore.jsonl"):
        traces[r["id"]] = {"query": r["query"], "answer": r["answer"], "chunks": r["chunks"]}
        claims = tuple((c["text"], _supported(c["label"])) for c in r["claims"])
        labels.append(TraceLabels(r["id"], claims, not r["hallucinated"], r.get("topic") or r["id"]))
    return traces, labels


def _factcheck(data: Path) -> Team:
    by_response: dict[str, list[dict[str, Any]]] = {}
    for r in _jsonl(data / "judge-dev" / "factcheck-gpt.jsonl"):
        by_response.setdefault(r["response"], []).append(r)
    traces, labels = {}, []
    for response, records in by_response.items():
        tid = "fc-" + hashlib.sha1(response.encode()).hexdigest()[:12]
        chunks = [
            {"id": f"{k}.{c['id']}", "content": c["content"]}
            for k, r in enumerate(records)
            for c in r["chunks"]
        ]
        traces[tid] = {"query": records[0]["query"], "answer": response, "chunks": chunks}
        claims = tuple((r["answer"], _supported(r["claims"][0]["label"])) for r in records)
        labels.append(TraceLabels(tid, claims, all(y for _, y in claims), tid))
    return traces, labels


def _rag(name: str) -> Team:
    traces, labels = {}, []
    for i, case in enumerate(rag.CASES[name]):
        for kind, answer in (("faithful", case["answer"]), ("hallucinated", case["hallucinated"])):
            tid = f"rag-{name}-{i}-{kind}"
            traces[tid] = rag.record(case, answer, i)
            labels.append(TraceLabels(tid, (), kind == "faithful", f"{name}-{i}"))
    return traces, labels


def _summaries() -> Team:
    traces, labels = {}, []
    for c, split in enumerate(summaries.CHUNKINGS.values()):
        for i, case in enumerate(summaries.CASES):
            for kind, text in (("faithful", case["summary"]), ("hallucinated", case["hallucinated"])):
                tid = f"summary-{i}-{c}-{kind}"
                traces[tid] = summaries.record(case, text, i, split(case["document"]))
                labels.append(TraceLabels(tid, (), kind == "faithful", f"case-{i}"))
    return traces, labels


def team_labels(name: str, data: Path = DATA) -> Team:
    """The traces (judge input records by trace id) and labels of set ``name``."""
    if name == "mtrag":
        return _mtrag(data)
    if name == "factscore":
        return _factscore(data)
    if name == "factcheck-gpt":
        return _factcheck(data)
    if name.startswith("rag-"):
        return _rag(name.removeprefix("rag-"))
    return _summaries()


def _cache_key(data: Path) -> str:
    h = hashlib.sha256()
    package = Path(judge_package.__file__).parent
    for path in (*sorted(package.rglob("*.py")), Path(__file__)):
        h.update(path.read_bytes())
    for path in sorted((package / "local" / "weights").glob("*.json")):
        h.update(path.read_bytes())
    h.update((package / "text" / "wordnet" / "relations.tsv").read_bytes())
    for name in ("judge-dev/mtrag.jsonl", "judge-dev/factscore.jsonl", "judge-dev/factcheck-gpt.jsonl"):
        st = (data / name).stat()
        h.update(f"{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    for name in ("judge_rag_cases.json", "judge_summary_cases.json"):
        h.update((ROOT / "bench" / name).read_bytes())
    return h.hexdigest()[:16]


def joined_team(names: tuple[str, ...] = IN_REPO) -> Team:
    """The traces and labels of several sets as one team's."""
    traces: dict[str, dict[str, Any]] = {}
    labels: list[TraceLabels] = []
    for name in names:
        t, lab = team_labels(name)
        traces.update(t)
        labels += lab
    return traces, labels


def label_sets(data: Path = DATA) -> dict[str, tuple[LabelSet, Team]]:
    """Every set of :data:`SETS` read by the judge's code (cached), with its traces and labels."""
    path = CACHE / f"sets-{_cache_key(data)}.pkl"
    teams = {name: team_labels(name, data) for name in SETS}
    if path.is_file():
        return {name: (ls, teams[name]) for name, ls in pickle.loads(path.read_bytes()).items()}
    model = load_model()
    sets = {}
    for name, (traces, labels) in teams.items():
        t0 = time.perf_counter()
        sets[name], missing = read_labels(traces, labels, model)
        assert not missing, missing
        print(f"read {name}: {len(traces)} traces, {len(sets[name].labelled)} claim labels, "
              f"{len(sets[name].judged)} extracted claims in {time.perf_counter() - t0:.0f}s", file=sys.stderr)  # fmt: skip
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(sets))
    return {name: (ls, teams[name]) for name, ls in sets.items()}
