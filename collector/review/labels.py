"""The review labels and how they become the rows ``ragpulse calibrate`` reads.

A reviewer labels each claim of a judged trace ``supported``, ``unsupported``
or ``contradicted`` (the judge's own verdicts) and the trace ``faithful`` or
``unfaithful``, optionally with the abstention kind and the failure mode. In
``rag_reviews`` a claim label has its claim index, a trace label the index
:data:`TRACE_LEVEL`.

:func:`calibration_rows` turns the latest labels per trace and the judge's
stored records into the labels-file rows of ``ragpulse calibrate``
(``{"trace_id", "human": {...}, "judge": {...}}``, and ``{"trace_id",
"judge": {...}}`` for judged traces nobody labelled, the population of the
prediction-powered estimate), so ``calibrate --from-reviews`` and
``review export-labels`` followed by ``calibrate FILE`` compute the same thing. A labelled
row also carries ``slice``, the judgments queue's slice its trace was labelled in
(``calibrate``'s prediction-powered interval takes only the random slice's), and
``claim_labels`` (:func:`claim_labels`), the claims ``ragpulse judge refit`` fits on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..contract import RANDOM_SLICE

__all__ = [
    "QUEUES",
    "INFORMATIVE",
    "RANDOM",
    "SLICES",
    "TRACE_LABELS",
    "TRACE_LEVEL",
    "Label",
    "calibration_rows",
    "claim_labels",
    "human_record",
    "trace_slice",
]

TRACE_LABELS: tuple[str, ...] = ("faithful", "unfaithful")
QUEUES: tuple[str, ...] = ("cases", "judgments")
TRACE_LEVEL = -1
#: The judgments queue's slices: ``random`` (judged traces in a fixed random order: labels
#: that estimate the population, what ``calibrate``'s interval needs) and ``informative``
#: (the traces a label teaches the judge most about). '' is a label saved before slices were
#: recorded (or by another tool).
RANDOM = RANDOM_SLICE
INFORMATIVE = "informative"
SLICES: tuple[str, ...] = (RANDOM, INFORMATIVE)


@dataclass(frozen=True)
class Label:
    """The latest label of one claim (or, with :data:`TRACE_LEVEL`, of the trace)."""

    trace_id: str
    claim_index: int
    label: str
    reviewer: str = ""
    judge_id: str = ""
    claim_text: str = ""
    judge_label: str = ""
    abstention_kind: str = ""
    failure_mode: str = ""
    comment: str = ""
    slice: str = ""  # the judgments queue's slice it was labelled in (:data:`SLICES`)


def trace_slice(labels: Iterable[Label]) -> str:
    """The slice a trace was labelled in: its trace label's, else its first claim label's."""
    ordered = sorted(labels, key=lambda lab: lab.claim_index)
    return ordered[0].slice if ordered else ""


def human_record(labels: Iterable[Label], claims_total: int) -> dict[str, Any]:
    """The ``human`` object of one trace's labels.

    ``faithfulness`` is the share of its claims labelled supported, when every claim the judge
    found (``claims_total``) has a label; ``faithful`` is the trace label, else (every claim
    labelled) whether all are supported, and absent for a trace without claims; ``abstention_kind``, ``failure_mode`` and
    ``abstained`` come from the trace label when the reviewer set them."""
    claims = {lab.claim_index: lab.label for lab in labels if lab.claim_index != TRACE_LEVEL}
    trace = next((lab for lab in labels if lab.claim_index == TRACE_LEVEL), None)
    out: dict[str, Any] = {}
    if claims_total > 0 and len(claims) >= claims_total:
        supported = sum(1 for i in range(claims_total) if claims.get(i) == "supported")
        out["faithfulness"] = round(supported / claims_total, 6)
    if claims_total == 0:
        pass  # no claims (an abstention): faithfulness does not apply, as the judge's null says
    elif trace is not None and trace.label in TRACE_LABELS:
        out["faithful"] = trace.label == "faithful"
    elif "faithfulness" in out:
        out["faithful"] = out["faithfulness"] >= 1.0
    if trace is not None and trace.failure_mode:
        out["failure_mode"] = trace.failure_mode
        out["abstained"] = trace.failure_mode == "abstain"
        if trace.failure_mode == "abstain":
            out["abstention_kind"] = trace.abstention_kind or None
    elif trace is not None and trace.abstention_kind:
        out["abstention_kind"] = trace.abstention_kind
    return out


def calibration_rows(
    judge_records: Mapping[str, dict[str, Any]], labels: Iterable[Label]
) -> list[dict[str, Any]]:
    """Labels-file rows: one per judged trace, with ``human`` where the trace has labels.

    ``judge_records``: trace id -> the judge's output record (with ``claims``), in the order
    the rows are written; labels of traces without a record are left out."""
    by_trace: dict[str, list[Label]] = {}
    for lab in labels:
        by_trace.setdefault(lab.trace_id, []).append(lab)
    rows = []
    for tid, record in judge_records.items():
        row: dict[str, Any] = {"trace_id": tid}
        if tid in by_trace:
            human = human_record(by_trace[tid], len(record.get("claims") or []))
            if human:
                row["human"] = human
            claims = claim_labels(by_trace[tid])
            if claims:
                row["claim_labels"] = claims
            if "human" in row:
                row["slice"] = trace_slice(by_trace[tid])
        row["judge"] = record
        rows.append(row)
    return rows


def claim_labels(labels: Iterable[Label]) -> list[dict[str, Any]]:
    """The ``claim_labels`` of one trace's labels: ``{"index", "text", "label"}`` per labelled
    claim, in claim order (what ``ragpulse judge refit`` fits the claim head on; ``human``
    stays the per-trace object ``calibrate`` reads)."""
    claims = sorted(
        (lab for lab in labels if lab.claim_index != TRACE_LEVEL), key=lambda lab: lab.claim_index
    )
    return [{"index": lab.claim_index, "text": lab.claim_text, "label": lab.label} for lab in claims]
