"""The judge test data the repository carries, as judge records.

- examples/worked_example/: the article's regulatory worked example (runs A-D)
  with its reference annotations and the figures its tables report;
- tests/data/attribution_cases.json: claim-support cases written for this
  project (question, claim, evidence passages, label), in AttributionBench's shape.

See tests/data/README.md for what each file holds and where it comes from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
WORKED = Path(__file__).resolve().parents[1] / "examples" / "worked_example"


def _load(name: str) -> Any:
    """A fresh copy on every call: tests may change what they get."""
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def worked_example() -> dict[str, Any]:
    """The worked example: corpus C1-C5, the query, and runs A-D with annotations and expected figures.

    Assembled from examples/worked_example/ (run.jsonl: what each run retrieved and answered;
    article.json: the article's annotations and figures per run), so the example has one copy.
    """
    lines = (WORKED / "run.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    article = json.loads((WORKED / "article.json").read_text(encoding="utf-8"))["cases"]
    corpus: dict[str, dict[str, Any]] = {}
    runs = []
    for rec in records:
        for chunk in rec["chunks"]:
            corpus[chunk["id"]] = {"id": chunk["id"], "content": chunk["content"], **chunk["metadata"]}
        runs.append(
            {
                "id": rec["case_id"].removeprefix("worked-example-"),
                "retrieved": [chunk["id"] for chunk in rec["chunks"]],
                "answer": rec["answer"],
                "citations": rec["citations"],
                **article[rec["case_id"]],
            }
        )
    return {"query": records[0]["query"], "corpus": [corpus[k] for k in sorted(corpus)], "runs": runs}


def worked_record(ex: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """One run of the worked example as a judge record (chunk status and authority as metadata)."""
    corpus = {c["id"]: c for c in ex["corpus"]}
    return {
        "trace_id": run["id"],
        "query": ex["query"],
        "answer": run["answer"],
        "chunks": [
            {
                "id": cid,
                "content": corpus[cid]["content"],
                "metadata": {"status": corpus[cid]["status"], "authoritative": corpus[cid]["authoritative"]},
            }
            for cid in run["retrieved"]
        ],
        "citations": run["citations"],
    }


def attribution_cases() -> list[dict[str, Any]]:
    """The claim-support cases: ``question``, ``claim``, ``references`` (evidence texts), ``label``."""
    return _load("attribution_cases.json")


def attribution_records() -> list[dict[str, Any]]:
    """Judge records from the cases: each claim against its own evidence, against another
    case's evidence (mostly unsupported), and two cases' claims as one answer over both
    cases' evidence (several claims, some supported)."""
    cases = attribution_cases()
    n = len(cases)

    def record(trace_id: str, question: str, answer: str, references: list[str]) -> dict[str, Any]:
        chunks = [{"id": f"R{j}", "content": ref} for j, ref in enumerate(references)]
        return {"trace_id": trace_id, "query": question, "answer": answer, "chunks": chunks}

    own = [record(c["id"], c["question"], c["claim"], c["references"]) for c in cases]
    other = [
        record(f"{c['id']}-x", c["question"], c["claim"], cases[(i + 7) % n]["references"])
        for i, c in enumerate(cases)
    ]
    joined = [
        record(
            f"{a['id']}+{b['id']}",
            a["question"] or b["question"],
            f"{a['claim']} {b['claim']}",
            a["references"] + b["references"],
        )
        for a, b in zip(cases[0::2], cases[1::2], strict=True)
    ]
    return own + other + joined
