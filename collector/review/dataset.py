"""The labelled data set the label commands share: which judge, which traces, which rows.

``ragpulse calibrate --from-reviews``, ``ragpulse review export-labels`` and
``ragpulse judge refit --from-reviews`` all read the labels of one judge (by
default the judge with the most labelled traces, else the most judgments) over
the judged traces of an optional service and start time.
"""

from __future__ import annotations

from typing import Any

from .labels import calibration_rows
from .store import ReviewStore, Scope

__all__ = ["NoLabels", "resolve_scope", "calibration_dataset"]


class NoLabels(ValueError):
    """Nothing to work with; the message says what is missing."""


def resolve_scope(store: ReviewStore, judge: str | None, service: str | None, since_ns: int | None) -> Scope:
    """The scope of ``judge`` (or the judge reviewers labelled most, else the busiest judge)."""
    if judge:
        return Scope(judge, service, since_ns)
    counts: dict[str, int] = {}
    for lab in store.labels(service=service):
        if lab.judge_id:
            counts[lab.judge_id] = counts.get(lab.judge_id, 0) + 1
    if counts:
        return Scope(max(sorted(counts), key=lambda j: counts[j]), service, since_ns)
    judges = store.judges(service)
    if not judges:
        raise NoLabels("no judged traces" + (f" of service {service!r}" if service else "") + " in the store")
    return Scope(judges[0][0], service, since_ns)


def calibration_dataset(store: ReviewStore, scope: Scope) -> list[dict[str, Any]]:
    """Labels-file rows (``ragpulse calibrate``'s format) of every judged trace of ``scope``."""
    records = store.judge_records(scope)
    labels = store.labels(judge_id=scope.judge_id, service=scope.service)
    rows = calibration_rows(records, labels)
    if not any("human" in r for r in rows):
        raise NoLabels(
            f"no review labels for judge {scope.judge_id}"
            + (f" and service {scope.service!r}" if scope.service else "")
            + " (label judgments with `ragpulse review`)"
        )
    return rows
