"""``ragpulse judge refit --labels FILE --traces FILE``: labels from anywhere, the printout, the
refusals and their one-line errors.

The labels are the hand-written RAG and summary cases as a team's trace labels
(``bench/judge_refit_data.py``: a faithful and a hallucinated answer per case, grouped by case),
written in the labels-file format ``ragpulse review export-labels`` writes; the traces are judge
input records. The round trip through the review store is tests/test_review.py's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.bench_modules import bench_modules
from tests.review_server import ragpulse


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("team")
    with bench_modules("judge_refit_data") as (data,):
        traces, labels = data.joined_team()
    rows = [
        {"trace_id": lab.trace_id, "human": {"faithful": lab.faithful}, "group": lab.group} for lab in labels
    ]
    return {
        "labels": _write(base / "labels.jsonl", rows),
        "traces": _write(
            base / "traces.jsonl", [{**traces[r["trace_id"]], "trace_id": r["trace_id"]} for r in rows]
        ),
        "rows": rows,
        "trace_rows": traces,
        "base": base,
    }


def test_labels_from_a_file_refit_the_response_rule_and_print_the_comparison(
    team: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "w.json"
    res = ragpulse(
        "judge", "refit", "--labels", str(team["labels"]), "--traces", str(team["traces"]), "-o", str(out)
    )
    text = res.stdout
    assert res.returncode in (0, 1), res.stderr
    assert (
        "labels: 0 claim labels from 264 traces" in text
        and "264 labelled answers (132 faithful, 132 unfaithful; 264 trace labels)" in text
    )
    assert (
        "refit: the response rule; the claim head kept (it needs 150 more claim labels, 30 more supported claims"
        in text
    )
    assert re.search(r"shipped judge: claim head v4 \+ response rule v1\s+\d\.\d{3}\s+-\s+-", text), text
    assert re.search(r"refit on these labels\s+\d\.\d{3}\s+-\s+-", text), text
    assert text.count("    fold ") == 5
    gain = re.search(
        r"answer-level balanced accuracy: gain ([+-]\d\.\d{3}), 95% interval \[([+-]\d\.\d{3}), ([+-]\d\.\d{3})\]",
        text,
    )
    assert gain and float(gain.group(2)) <= float(gain.group(1)) <= float(gain.group(3)), text
    assert "claim balanced accuracy: gain      -" in text and ": not measured" in text
    curve = re.findall(r"^\s+(25|50|100)%\s+(\d\.\d{3})", text, re.M)
    assert [c[0] for c in curve] == ["25", "50", "100"], text
    if res.returncode == 0:
        assert (
            out.exists() and "refit: better than the shipped judge on answer-level balanced accuracy" in text
        )
    else:
        assert not out.exists() and re.search(r"^refused: .+; nothing written$", text, re.M), text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--labels", "L"], "--labels needs --traces FILE (the labelled traces as `ragpulse judge` input)"),
        (
            ["--from-reviews", "--labels", "L", "--traces", "T"],
            "give either --from-reviews or --labels FILE --traces FILE",
        ),
        ([], "give either --from-reviews or --labels FILE --traces FILE"),
        (["--from-reviews", "--traces", "T", "--db", "D"], "--traces goes with --labels"),
        (
            ["--labels", "L", "--traces", "T", "--db", "D"],
            "--db, --config, --service, --since and --judge go with --from-reviews",
        ),
        (["--labels", "L", "--traces", "T", "--folds", "2"], "--folds must be at least 3"),
    ],
)
def test_option_mistakes_are_one_line(
    team: dict[str, Any], tmp_path: Path, args: list[str], message: str
) -> None:
    subs = {"L": str(team["labels"]), "T": str(team["traces"]), "D": str(tmp_path / "db")}
    res = ragpulse("judge", "refit", *[subs.get(a, a) for a in args], "-o", str(tmp_path / "w.json"))
    assert res.returncode == 2 and res.stderr.strip() == f"ragpulse judge refit: error: {message}", res.stderr


def test_bad_label_and_trace_lines_name_the_line(team: dict[str, Any], tmp_path: Path) -> None:
    rows = list(team["rows"][:3])
    rows[2] = {"trace_id": rows[2]["trace_id"], "claim_labels": [{"text": "A claim.", "label": "maybe"}]}
    bad_labels = _write(tmp_path / "bad-labels.jsonl", rows)
    res = ragpulse(
        "judge",
        "refit",
        "--labels",
        str(bad_labels),
        "--traces",
        str(team["traces"]),
        "-o",
        str(tmp_path / "w"),
    )
    assert res.returncode == 2
    assert res.stderr.strip() == (f"ragpulse judge refit: error: {bad_labels}: line 3: claim label 'maybe' is not one of "
                                  "supported, unsupported, contradicted")  # fmt: skip
    bad_traces = _write(tmp_path / "bad-traces.jsonl", [{"trace_id": "t1", "query": "q"}])
    res = ragpulse(
        "judge",
        "refit",
        "--labels",
        str(team["labels"]),
        "--traces",
        str(bad_traces),
        "-o",
        str(tmp_path / "w"),
    )
    assert res.returncode == 2
    assert (
        res.stderr.strip() == f"ragpulse judge refit: error: {bad_traces}: line 1: 'answer' must be a string"
    )


def test_too_few_labels_say_what_each_part_needs(team: dict[str, Any], tmp_path: Path) -> None:
    rows = team["rows"][:24]  # twelve cases: 12 faithful and 12 hallucinated answers
    labels = _write(tmp_path / "few.jsonl", rows)
    out = tmp_path / "w.json"
    res = ragpulse("judge", "refit", "--labels", str(labels), "--traces", str(team["traces"]), "-o", str(out))
    assert res.returncode == 2 and not out.exists()
    assert res.stderr.strip() == (
        "ragpulse judge refit: error: too few labels to refit: 0 claim labels from 24 traces (0 supported, 0 "
        "unsupported or contradicted), 24 labelled answers (12 faithful, 12 unfaithful; 24 trace labels); the claim "
        "head needs 150 more claim labels, 30 more supported claims, 30 more unsupported or contradicted claims, the "
        "response rule 16 more labelled answers (label them in `ragpulse review`)"
    )


def test_labelled_traces_missing_from_the_traces_file_are_left_out_and_counted(
    team: dict[str, Any], tmp_path: Path
) -> None:
    traces = _write(tmp_path / "some.jsonl", [{**team["trace_rows"][r["trace_id"]], "trace_id": r["trace_id"]}
                                              for r in team["rows"][:200]])  # fmt: skip
    res = ragpulse(
        "judge", "refit", "--labels", str(team["labels"]), "--traces", str(traces), "-o", str(tmp_path / "w")
    )
    assert res.returncode in (0, 1), res.stderr
    assert (
        "from 200 traces" in res.stdout
        and "; 64 labelled traces are not in the traces (left out)" in res.stdout
    )
