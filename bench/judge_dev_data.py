"""The judge's development data as claim items, featurised once and cached.

Reads ``../shared/data`` (AttributionBench dev and ``judge-dev/``: FActScore,
Factcheck-GPT, WiCE dev; HaluEval QA has response labels only and is judged
whole by :func:`halueval_report`, a sanity row of bench/judge_quality.py). Each labelled claim
becomes one item with:

- ``source`` (data set), ``sub`` (its sub-source), ``group`` (the cross-validation
  group: FActScore topic, Factcheck-GPT response, WiCE article title,
  AttributionBench question; records in one group share evidence), ``response``
  (the answer the claim comes from, for response-level scores), ``label``
  (1 = supported by the chunks; ``partial``, ``unsupported`` and ``contradicted`` are 0);
- ``x``: the local judge's claim features (:mod:`ragpulse.collector.judge.local.claim_features`);
- ``v1``: the current (v1) judge's claim confidence, the max pair probability
  with its number veto, computed by the packaged v1 pair model;
- ``neg``: the judge's conflict rules (:mod:`ragpulse.collector.judge.local.rules.conflicts`: negation, a
  necessary condition read as sufficient) fire on the best chunk;
- ``overlap``: the lexical-overlap baseline, the share of the claim's content
  stems found anywhere in the chunks.

Featurising all 16,700 claims takes a few minutes on one core, so the result
is cached under ``.cache/judge-quality/`` keyed by the judge's source code and
the data files; any change to either recomputes it.

The response decision reads real answers as :class:`Answer` (claim verdicts and probabilities,
gold label, group): MTRAG and the hand-written RAG and summary cases judged whole
(:func:`judged_answers`), the FActScore and Factcheck-GPT responses from their labelled claims'
out-of-fold probabilities (:func:`claim_set_answers`).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import judge_metrics as jm
import numpy as np
from ragpulse.collector import judge as judge_package
from ragpulse.collector.judge.local.claim_features import ChunkIndex, claim_evidence
from ragpulse.collector.judge.local.claims import extract_claims, normalise_claim
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.judge import QUESTION_WORDS, LocalJudge
from ragpulse.collector.judge.local.rules.approximate import claim_profile
from ragpulse.collector.judge.local.rules.conflicts import conflicts as conflicts_with
from ragpulse.collector.judge.local.support import claim_view, load_model
from ragpulse.collector.judge.text.tokens import profile

__all__ = [
    "DATA",
    "RESPONSE_SOURCES",
    "SOURCES",
    "Answer",
    "claim_set_answers",
    "halueval_report",
    "iter_records",
    "judged_answers",
    "load_items",
    "per_claim",
]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CACHE = ROOT / ".cache" / "judge-quality"
SOURCES: tuple[str, ...] = ("attributionbench", "factscore", "factcheck-gpt", "wice")
_FILES = {
    "attributionbench": "attributionbench-dev.jsonl",
    "factscore": "judge-dev/factscore.jsonl",
    "factcheck-gpt": "judge-dev/factcheck-gpt.jsonl",
    "wice": "judge-dev/wice-dev.jsonl",
}
_URL_LINE = re.compile(r"^\[\d+\]\s*https?://\S+\s*", re.M)
_V1_WEIGHTS = "weights/support-v1.json"


def _read(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def iter_records(data: Path, source: str) -> Iterator[dict[str, Any]]:
    """One dict per response: ``query``, ``chunks``, ``claims`` [(text, label)], ``group``,
    ``response``, ``sub``."""
    path = data / _FILES[source]
    for r in _read(path):
        if source == "attributionbench":
            chunks = [
                {"id": str(i), "content": _URL_LINE.sub("", ref) or ref}
                for i, ref in enumerate(r["references"])
            ]
            label = 1 if r["attribution_label"] == "attributable" else 0
            yield {
                "query": r.get("question") or "",
                "chunks": chunks,
                "claims": [(r["claim"], label)],
                "group": f"ab:{r.get('question') or r['id']}",
                "response": f"ab:{r['id']}",
                "sub": r.get("src_dataset", "?"),
            }
            continue
        claims = [(c["text"], 1 if c["label"] == "supported" else 0) for c in r["claims"]]
        if source == "factscore":
            group, response = f"fs:{r.get('topic') or r['id']}", r["id"]
        elif source == "factcheck-gpt":
            group = response = f"fc:{r.get('response') or r['id']}"
        else:
            group, response = f"wice:{r.get('wiki_title') or r['query']}", r["id"]
        yield {
            "query": r["query"],
            "chunks": [c for c in r["chunks"] if c["content"].strip()],
            "claims": claims,
            "group": group,
            "response": response,
            "sub": r["source"],
        }


def _items_of(rec: dict[str, Any], source: str, v1, model) -> list[dict[str, Any]]:
    chunks = build_evidence(rec["chunks"])
    qstems = frozenset(s for s in profile(rec["query"]).stem_set if s not in QUESTION_WORDS)
    index = ChunkIndex(chunks)
    all_stems = index.all_stems
    out = []
    for claim_text, label in rec["claims"]:
        text = normalise_claim(claim_text)
        cp = claim_profile(text, chunks, index.all_numbers)
        view = claim_view(cp, qstems)
        ce = claim_evidence(view, index, model, text)
        v1_conf = max((p for p, _ in v1.support_all(view, chunks)), default=0.0)
        overlap = len(cp.stem_set & all_stems) / max(1, len(cp.stem_set))
        out.append(
            {
                "source": source,
                "sub": rec["sub"],
                "group": rec["group"],
                "response": rec["response"],
                "label": label,
                "x": ce.features,
                "v1": v1_conf,
                "overlap": overlap,
                "neg": bool(chunks) and conflicts_with(cp, chunks[ce.best]),
                "numbers_elsewhere": ce.numbers_elsewhere,
                "ordinals_missing": ce.ordinals_missing,
                "segment_missing": ce.segment_missing,
            }
        )
    return out


def _cache_key(data: Path) -> str:
    h = hashlib.sha256()
    # Every module of the judge (a feature may come from any of them, and a new module needs
    # no entry here) and this one, the pair model the v1 column reads, the word relations.
    package = Path(judge_package.__file__).parent
    for path in (*sorted(package.rglob("*.py")), Path(__file__)):
        h.update(path.read_bytes())
    h.update((package / "local" / "weights" / "support-v1.json").read_bytes())
    h.update((package / "text" / "wordnet" / "relations.tsv").read_bytes())
    for name in _FILES.values():
        st = (data / name).stat()
        h.update(f"{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def load_items(data: Path = DATA, *, use_cache: bool = True, verbose: bool = True) -> list[dict[str, Any]]:
    """Every labelled claim of the claim-level dev sets, featurised (cached)."""
    key = _cache_key(data)
    path = CACHE / f"items-{key}.pkl"
    if use_cache and path.is_file():
        return pickle.loads(path.read_bytes())
    v1 = load_model()
    model = load_model()
    items: list[dict[str, Any]] = []
    for source in SOURCES:
        t0 = time.perf_counter()
        n0 = len(items)
        for rec in iter_records(data, source):
            items.extend(_items_of(rec, source, v1, model))
        if verbose:
            print(
                f"featurised {source}: {len(items) - n0} claims in {time.perf_counter() - t0:.1f}s",
                file=sys.stderr,
            )
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(items))
    return items


def per_claim(
    data: Path, factscore_share: float, label: str, read: Callable[[dict[str, Any], list[Any]], Iterable[Any]]
) -> list[Any]:
    """Per dev claim, in :func:`load_items` order: what ``read(record, chunk_evidence)`` gives for
    each claim of the record, or None for the claims of the FActScore people subsampled out (the
    share ``factscore_share``, by a hash of the person, the same people for every bench). The time
    each set takes goes to stderr after ``label``."""
    out: list[Any] = []
    for source in SOURCES:
        t0 = time.perf_counter()
        for rec in iter_records(data, source):
            if source == "factscore" and jm.fold_of(rec["group"], 100, seed=7) >= factscore_share * 100:
                out.extend([None] * len(rec["claims"]))
                continue
            out.extend(read(rec, build_evidence(rec["chunks"])))
        print(f"{label} {source} in {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    return out


# -- HaluEval QA: a sanity check of whole answers with response labels -------------------------
# Each record (a HotpotQA question, its knowledge paragraph as the one chunk, a right or a
# ChatGPT-hallucinated answer) is judged end to end, never fitted on; the right answers are short
# spans and the hallucinated ones sentences, so this checks plumbing and direction, not quality.


def _v1_and_lexical(rec: dict[str, Any], v1) -> tuple[bool, bool]:
    chunks = build_evidence(rec["chunks"])
    claims = extract_claims(rec["answer"], [c.id for c in chunks]).claims
    qstems = frozenset(s for s in profile(rec["query"]).stem_set if s not in QUESTION_WORDS)
    stems = frozenset().union(*(c.whole.stem_set for c in chunks))
    v1_bad = lex_bad = False
    for c in claims:
        cp = profile(c.text)
        if max((p for p, _ in v1.support_all(claim_view(cp, qstems), chunks)), default=0.0) < 0.5:
            v1_bad = True
        if len(cp.stem_set & stems) < 0.5 * max(1, len(cp.stem_set)):
            lex_bad = True
    return v1_bad, lex_bad


def halueval_report(data: Path) -> dict[str, Any]:
    """Judge every HaluEval QA record; print and return response-level F1 and balanced accuracy."""
    path = data / "judge-dev" / "halueval-qa.jsonl"
    if not path.is_file():
        print(f"halueval-qa: {path} not found, skipped")
        return {}
    judge, v1 = LocalJudge(), load_model()
    gold, pred = [], {"lexical": [], "v1": [], "v3": []}
    unsure = 0
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            r = json.loads(line)
            rec = {"trace_id": f"h{n}", "query": r["query"], "answer": r["answer"], "chunks": r["chunks"]}
            verdict = judge.judge(rec).get("response_verdict")
            v1_bad, lex_bad = _v1_and_lexical(rec, v1)
            gold.append(int(bool(r["hallucinated"])))
            pred["v3"].append(int(verdict == "hallucinated"))
            pred["v1"].append(int(v1_bad))
            pred["lexical"].append(int(lex_bad))
            unsure += verdict == "unsure"
    g = np.array(gold)
    print(
        f"halueval-qa (sanity; judged whole)  responses={len(g)}  hallucinated={g.mean():.2f}  v3 unsure={unsure}"
    )
    print(f"  {'judge':<8}{'F1':>8}{'bal.acc':>10}")
    out: dict[str, Any] = {}
    for name, p in pred.items():
        pa = np.array(p)
        out[name] = {"f1": jm.f1(pa, g), "balanced_accuracy": jm.balanced_accuracy(pa, g)}
        print(f"  {name:<8}{out[name]['f1']:>8.3f}{out[name]['balanced_accuracy']:>10.3f}")
    return out


# -- real answers, for the response decision (bench/judge_responses.py) -----------------------

MTRAG = "judge-dev/mtrag.jsonl"
# The claim sets whose records are whole responses of several claims.
RESPONSE_SOURCES: tuple[str, ...] = ("factscore", "factcheck-gpt")


@dataclass(frozen=True, slots=True)
class Answer:
    """One real answer: its set, cross-validation group, gold label (hallucinated), and its claims'
    verdicts and support probabilities with the claim threshold they were judged at."""

    source: str
    group: str
    gold: bool
    verdicts: tuple[str, ...]
    probs: tuple[float, ...]
    threshold: float


def _judged(source: str, group: str, gold: bool, out: dict[str, Any], threshold: float) -> Answer:
    claims = out["claims"]
    return Answer(
        source,
        group,
        gold,
        tuple(c["verdict"] for c in claims),
        tuple(float(c["support_probability"]) for c in claims),
        threshold,
    )


def judged_answers(judge: Any, data: Path) -> list[Answer]:
    """MTRAG (labelled answers only) and the hand-written RAG and summary cases, judged whole by
    ``judge`` (a local judge: its claims carry support probabilities)."""
    import judge_rag_answers as rag
    import judge_summaries as summaries

    out: list[Answer] = []
    thr = judge.threshold
    with (data / MTRAG).open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line) if line.strip() else None
            if r is None or r["hallucinated"] is None:
                continue
            rec = {"trace_id": r["id"], "query": r["query"], "answer": r["answer"], "chunks": r["chunks"]}
            out.append(_judged("mtrag", r["conversation_id"], r["hallucinated"], judge.judge(rec), thr))
    for name, cases in rag.CASES.items():
        for i, case in enumerate(cases):
            for gold, answer in ((False, case["answer"]), (True, case["hallucinated"])):
                res = judge.judge(rag.record(case, answer, i))
                out.append(_judged(f"rag-{name}", f"{name}-{i}", gold, res, thr))
    for split in summaries.CHUNKINGS.values():
        for i, case in enumerate(summaries.CASES):
            for gold, text in ((False, case["summary"]), (True, case["hallucinated"])):
                res = judge.judge(summaries.record(case, text, i, split(case["document"])))
                out.append(_judged("summaries", f"case-{i}", gold, res, thr))
    return out


def claim_set_answers(
    items: list[dict[str, Any]],
    responses: list[list[int]],
    prob: np.ndarray,
    score: np.ndarray,
    threshold: np.ndarray,
    contradicted: np.ndarray,
) -> list[Answer]:
    """The :data:`RESPONSE_SOURCES` responses from their labelled claims (``responses``: each
    one's rows): out-of-fold probability ``prob``, verdict ``score >= threshold`` (the judge's
    verdict score and its fold's threshold), ``contradicted`` where the conflict rules fire."""
    out = []
    for rows in responses:
        source = items[rows[0]]["source"]
        if source not in RESPONSE_SOURCES:
            continue
        thr = float(threshold[rows[0]])
        verdicts = tuple(
            "supported" if score[k] >= thr else "contradicted" if contradicted[k] else "unsupported"
            for k in rows
        )
        gold = any(items[k]["label"] == 0 for k in rows)
        out.append(Answer(source, str(items[rows[0]]["group"]), gold, verdicts, tuple(prob[rows]), thr))
    return out
