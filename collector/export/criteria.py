"""What makes a production trace an eval-set case: the export's criteria and reason names.

Each criterion, when it matches a trace, adds one reason to the case; a case
keeps every reason it matched. The reasons, in the order the export ranks them
(a case ranks by its best reason; alert snapshots always come first):

==========================  ====================================================
``alert:<AlertName>``       a failing trace of a service inside a firing quality
                            alert's window (queued by the Alertmanager receiver)
``failure_mode:<mode>``     the judge's failure mode is one of ``failure_modes``
``false_refusal``           the answer refused although the chunks support one
``hallucination``           a claim unsupported by any chunk (not copied noise)
``invalid_citation``        a claim whose citation does not entail it
``low_faithfulness``        faithfulness below ``faithfulness_below``
``feedback:negative``       negative feedback (explicit, imported or a re-ask)
==========================  ====================================================

A criteria file (YAML or JSON) overrides any of the keys of :data:`DEFAULTS`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Criteria", "DEFAULTS", "REASON_ORDER", "load_criteria", "reason_rank"]

REASON_ORDER = (
    "alert",
    "failure_mode",
    "false_refusal",
    "hallucination",
    "invalid_citation",
    "low_faithfulness",
    "feedback",
)
DEFAULTS: dict[str, Any] = {
    "failure_modes": ["retrieval", "generation", "both"],
    "faithfulness_below": 0.8,
    "invalid_citation": True,
    "false_refusal": True,
    "hallucination": True,
    "negative_feedback": True,
    "alerts": True,
    "near_duplicate_threshold": 0.7,  # character-trigram Jaccard of normalised questions
}


@dataclass(frozen=True)
class Criteria:
    """The parsed criteria (see the module docstring)."""

    failure_modes: tuple[str, ...] = tuple(DEFAULTS["failure_modes"])
    faithfulness_below: float | None = DEFAULTS["faithfulness_below"]
    invalid_citation: bool = True
    false_refusal: bool = True
    hallucination: bool = True
    negative_feedback: bool = True
    alerts: bool = True
    near_duplicate_threshold: float = DEFAULTS["near_duplicate_threshold"]
    source: str = field(default="defaults", compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The criteria as written to the manifest."""
        return {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items() if k != "source"
        }


def reason_rank(reason: str) -> int:
    """The position of a reason's family in :data:`REASON_ORDER` (unknown families last)."""
    family = reason.split(":", 1)[0]
    return REASON_ORDER.index(family) if family in REASON_ORDER else len(REASON_ORDER)


def _from_mapping(data: Mapping[str, Any], source: str) -> Criteria:
    unknown = sorted(set(data) - set(DEFAULTS))
    if unknown:
        raise ValueError(
            f"{source}: unknown criteria key(s) {', '.join(unknown)} (known: {', '.join(DEFAULTS)})"
        )
    merged = {**DEFAULTS, **data}
    modes = merged["failure_modes"] or []
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        raise ValueError(f"{source}: failure_modes must be a list of failure-mode names")
    below = merged["faithfulness_below"]
    if below is not None and not (isinstance(below, (int, float)) and 0 <= below <= 1):
        raise ValueError(f"{source}: faithfulness_below must be a number in [0, 1] or null")
    threshold = merged["near_duplicate_threshold"]
    if not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"{source}: near_duplicate_threshold must be within (0, 1]")
    flags = ("invalid_citation", "false_refusal", "hallucination", "negative_feedback", "alerts")
    for key in flags:
        if not isinstance(merged[key], bool):
            raise ValueError(f"{source}: {key} must be true or false")
    return Criteria(
        failure_modes=tuple(modes),
        faithfulness_below=None if below is None else float(below),
        near_duplicate_threshold=float(threshold),
        source=source,
        **{k: merged[k] for k in flags},
    )


def load_criteria(path: str | Path | None) -> Criteria:
    """The defaults, or the defaults overridden by a YAML/JSON file; ValueError names the problem."""
    if path is None:
        return Criteria()
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read criteria file {p}: {exc.strerror}") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {exc}") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{p}: criteria must be a mapping")
    return _from_mapping(data, str(p))
