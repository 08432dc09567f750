"""The self-contained HTML report of an eval.

One file, no network: the page's script draws every chart from the eval's own
JSON document, embedded in the page, so what the charts show is the JSON
output by construction (and the browser test checks it). Every chart element
carries its figures as ``data-*`` attributes.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

from .metrics import METRICS
from .report_text import SLICE_COLUMNS

__all__ = ["render_html", "write_html"]


def render_html(doc: dict[str, Any]) -> str:
    """The report page for an :func:`~.evaluate.evaluate` document."""
    template = resources.files(__package__).joinpath("report.html").read_text(encoding="utf-8")
    payload = {**doc, "metric_specs": [asdict(m) for m in METRICS], "slice_columns": list(SLICE_COLUMNS)}
    # "<" escaped keeps "</script>" in a case's text from ending the data block; JSON reads it back.
    data = json.dumps(payload, ensure_ascii=False, allow_nan=False).replace("<", "\\u003c")
    return template.replace("/*EVAL_DATA*/", data, 1)


def write_html(doc: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(render_html(doc), encoding="utf-8")
