"""The position sweep: the "Lost in the Middle" control.

For every answerable case whose frozen context holds a gold-evidence chunk (a
chunk of a ``supporting_evidence_spans`` document or an acceptable
alternative), the app is re-run with that chunk moved through every position
of the context while the other chunks keep their order. Question, documents
and the correct answer stay the same, so a change in quality by position
isolates position as the cause. The result is the mean of
:data:`SWEEP_METRICS` at each position, with its n.
"""

from __future__ import annotations

from typing import Any

from .evaluate import Progress, score_run
from .files import EvalInputError
from .metrics import answerable
from .ranking import doc_keys
from .replay import Replayer, accepts_chunks, snapshot_chunks

__all__ = ["SWEEP_METRICS", "sweep_contexts", "position_sweep"]

SWEEP_METRICS: tuple[str, ...] = ("claim_recall", "strict_pass", "faithfulness")


def sweep_contexts(case: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The case's frozen context with its first gold-evidence chunk at position 1, 2, ..., k
    (empty when the case is unanswerable, has no evidence spans, or its context lacks the evidence)."""
    if answerable(case) is not True:
        return []
    relevant = {str(s["doc_id"]) for s in case.get("supporting_evidence_spans") or []}
    relevant |= {str(a) for a in case.get("acceptable_alternative_sources") or []}
    context = snapshot_chunks(case)
    gold = next((i for i, ch in enumerate(context) if doc_keys(ch) & relevant), None)
    if gold is None or len(context) < 2:
        return []
    others = context[:gold] + context[gold + 1 :]
    return [others[:p] + [context[gold]] + others[p:] for p in range(len(context))]


def position_sweep(
    replayer: Replayer,
    judge: Any,
    cases: list[dict[str, Any]],
    fields: list[str],
    progress: Progress | None = None,
) -> dict[str, Any] | None:
    """{"positions", "n", "metrics": {name: [mean at each position]}}; None when no case qualifies."""
    if not accepts_chunks(replayer.fn):
        raise EvalInputError("--sweep-position: the app does not accept a 'chunks' argument")
    contexts = {c["id"]: sweep_contexts(c) for c in cases}
    depth = max((len(v) for v in contexts.values()), default=0)
    if depth == 0:
        return None
    out: dict[str, Any] = {"positions": list(range(1, depth + 1)), "n": [], "cases": 0}
    out["metrics"] = {m: [] for m in SWEEP_METRICS}
    for pos in range(depth):
        sub = [c for c in cases if len(contexts[c["id"]]) > pos]
        run = {c["id"]: replayer.call(c, chunks=contexts[c["id"]][pos]) for c in sub}
        results = score_run(judge, sub, run, fields)
        out["n"].append(len(sub))
        for m in SWEEP_METRICS:
            vals = [float(r["metrics"][m]) for r in results if r["metrics"].get(m) is not None]
            out["metrics"][m].append(sum(vals) / len(vals) if vals else None)
        if progress:
            progress(f"position sweep: position {pos + 1}/{depth} ({len(sub)} cases)")
    out["cases"] = sum(1 for v in contexts.values() if v)
    return out
