"""A team's labels as the arrays a refit fits on, read by the judge's own code.

A refit (:mod:`.decision`) fits everything between a trace and its ``response_verdict``
(the claim head and the response rule), so it needs, per labelled trace:

- the labelled claims, each read against the trace's chunks (:func:`.reading.read_claim`,
  after :func:`.claims.normalise_claim`, as extraction writes claims), with its label;
- the claims the judge itself extracts from the answer, read by :func:`.judge.read_trace`:
  the answer-level decision is made from these, as in production;
- the answer's label: the trace label where one was given, else hallucinated when any
  labelled claim is not supported, else none;
- its cross-validation group: the trace, or the session or source the labels name.

Per claim it keeps the features of the weights file and the flags the verdict rule reads
(:mod:`.reading`): one chunk supports it on its own, it rests on a chunk when it clears the
threshold, every such chunk conflicts with it, a chunk contradicts it, and the number flags
the probability caps read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ...record import normalise_input
from ..claim_features import CLAIM_FEATURES
from ..claims import normalise_claim
from ..judge import read_trace
from ..reading import ClaimReading, read_claim, support_of
from ..rules.conflicts import contradicting
from ..support import SupportModel

__all__ = ["Claims", "LabelSet", "TraceLabels", "read_labels"]

_NUM_MISS = CLAIM_FEATURES.index("num_miss")


@dataclass(frozen=True)
class TraceLabels:
    """One trace's labels: (claim text, 1 supported / 0 not) pairs, the trace label (None when
    not given) and the cross-validation group."""

    trace_id: str
    claims: tuple[tuple[str, int], ...]
    faithful: bool | None
    group: str


@dataclass(frozen=True)
class Claims:
    """Claims as arrays: features, the verdict rule's flags, the trace (an index into
    :attr:`LabelSet.trace_ids`) and the label (1 supported, 0 not, -1 none)."""

    x: np.ndarray
    strong: np.ndarray  # one chunk supports it on its own (the pair model)
    rests: np.ndarray  # cleared, it rests on a chunk that does not conflict with it
    conflicted: np.ndarray  # cleared, every chunk it would rest on conflicts with it
    contradicted: np.ndarray  # a chunk contradicts it (the verdict when not supported)
    lacks: np.ndarray  # its best chunk lacks one of its numbers
    elsewhere: np.ndarray  # ... each of which another chunk has next to its words
    ordinals: np.ndarray  # ... all of them ordinals
    trace: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    def take(self, rows: np.ndarray) -> Claims:
        """The claims of ``rows`` (a boolean mask or indices)."""
        return Claims(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})


@dataclass(frozen=True)
class LabelSet:
    """Labelled traces: ids, groups, answer labels (1 hallucinated, 0 faithful, -1 none), the
    labelled claims and the claims the judge extracts from the answers."""

    trace_ids: np.ndarray
    group: np.ndarray
    gold: np.ndarray
    labelled: Claims
    judged: Claims
    trace_label: np.ndarray  # the answer label is a trace label (not read from the claim labels)

    def traces(self, mask: np.ndarray) -> LabelSet:
        """The traces of ``mask`` (over :attr:`trace_ids`), with their claims, renumbered."""
        keep = np.flatnonzero(mask)
        renumber = np.full(len(self.trace_ids), -1)
        renumber[keep] = np.arange(len(keep))

        def part(c: Claims) -> Claims:
            sub = c.take(mask[c.trace])
            return Claims(
                **{**{f.name: getattr(sub, f.name) for f in fields(sub)}, "trace": renumber[sub.trace]}
            )

        return LabelSet(self.trace_ids[keep], self.group[keep], self.gold[keep], part(self.labelled),
                        part(self.judged), self.trace_label[keep])  # fmt: skip


def _row(reading: ClaimReading, chunks: list[Any]) -> tuple[list[float], tuple[bool, ...]]:
    ce = reading.evidence
    support = support_of(reading, chunks)
    flags = (
        ce.one_chunk_supports,
        bool(support.chunks),
        support.conflicted,
        bool(contradicting(reading.profile, chunks)),
        ce.features[_NUM_MISS] > 0,
        ce.numbers_elsewhere,
        ce.ordinals_missing,
    )
    return list(ce.features), flags


def _claims(rows: list[tuple[list[float], tuple[bool, ...]]], trace: list[int], y: list[int]) -> Claims:
    x = np.array([r[0] for r in rows], dtype=float).reshape(len(rows), len(CLAIM_FEATURES))
    flags = np.array([r[1] for r in rows], dtype=bool).reshape(len(rows), 7)
    return Claims(x, *(flags[:, k] for k in range(7)), np.array(trace, dtype=int), np.array(y, dtype=int))


def _gold(lab: TraceLabels) -> int:
    if lab.faithful is not None:
        return 0 if lab.faithful else 1
    return 1 if any(y == 0 for _, y in lab.claims) else -1


def read_labels(
    traces: Mapping[str, dict[str, Any]], labels: Sequence[TraceLabels], model: SupportModel
) -> tuple[LabelSet, list[str]]:
    """The labels of every trace ``traces`` holds (judge input records by trace id), read with
    the pair model ``model``, in trace-id order; and the ids of labelled traces it lacks."""
    missing = sorted({lab.trace_id for lab in labels if lab.trace_id not in traces})
    present = sorted((lab for lab in labels if lab.trace_id in traces), key=lambda lab: lab.trace_id)
    lab_rows: list[tuple[list[float], tuple[bool, ...]]] = []
    judged_rows: list[tuple[list[float], tuple[bool, ...]]] = []
    lab_trace: list[int] = []
    judged_trace: list[int] = []
    ys: list[int] = []
    for t, lab in enumerate(present):
        tr = read_trace(normalise_input({**traces[lab.trace_id], "trace_id": lab.trace_id}), model)
        for reading in tr.claims:
            judged_rows.append(_row(reading, tr.chunks))
            judged_trace.append(t)
        for text, y in lab.claims:
            reading = read_claim(normalise_claim(text), tr.chunks, tr.index, tr.qstems, model)
            lab_rows.append(_row(reading, tr.chunks))
            lab_trace.append(t)
            ys.append(int(y))
    label_set = LabelSet(
        np.array([lab.trace_id for lab in present], dtype=object),
        np.array([lab.group for lab in present], dtype=object),
        np.array([_gold(lab) for lab in present], dtype=int),
        _claims(lab_rows, lab_trace, ys),
        _claims(judged_rows, judged_trace, [-1] * len(judged_rows)),
        np.array([lab.faithful is not None for lab in present], dtype=bool),
    )
    return label_set, missing
