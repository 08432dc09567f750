"""HaluEval QA sanity check for bench/judge_quality.py: whole answers, response labels.

Each record (a HotpotQA question, its knowledge paragraph as the one chunk, a right
or a ChatGPT-hallucinated answer) is judged end to end, claims extracted from the
answer. Never used for fitting, so every figure is out of sample. The right answers
are short spans and the hallucinated ones sentences (see the data README), so this
checks plumbing and direction, not fine quality.

- ``lexical``: hallucinated when a claim has under half its content stems in the chunk;
- ``v1``: hallucinated when a claim has no chunk with v1 pair probability >= 0.5 (the
  previous judge's verdict rule, on the same extracted claims);
- ``v3``: the packaged local judge's ``response_verdict`` is ``hallucinated`` (``unsure`` counted apart).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import judge_metrics as jm
import numpy as np
from ragpulse.collector.judge.local.claims import extract_claims
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.judge import QUESTION_WORDS, LocalJudge
from ragpulse.collector.judge.local.support import claim_view, load_model
from ragpulse.collector.judge.text.tokens import profile

__all__ = ["halueval_report"]


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
