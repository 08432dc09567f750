"""``ragpulse review`` in real headless Chromium, driven with the keyboard only.

On a database the demo filled and the eval set its export wrote, a reviewer
accepts one case, tries an invalid edit (the split ``prod``: the message shows
beside the field and the file stays byte for byte), fixes it and saves the
edit, rejects a third case with a reason, then labels five judged traces claim
by claim. After the server stops on Ctrl-C, exactly those three cases changed
in the eval set (every other line is untouched) and exactly those five traces'
labels are in ``rag_reviews``; the server's counters say the same.

Screenshots of the pages land in the test's directory (docs/review.md's come
from here: set RAGPULSE_REVIEW_SCREENSHOTS=DIR to keep them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.browser import Browser
from tests.review_server import ReviewServer, demo_store
from tests.services import chromium_binary

REVIEWER = "alice"
GOLD_EDIT = [
    "Earlier deletion requires documented authorization.",
    "All active legal holds must be released.",
]


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_binary()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return demo_store(tmp_path_factory.mktemp("review"))


def _lines(path: Path) -> dict[str, bytes]:
    return {json.loads(raw)["id"]: raw for raw in path.read_bytes().splitlines() if raw.strip()}


def _page(b: Browser) -> dict[str, Any]:
    return b.evaluate(
        """({path: location.pathname, caseId: document.getElementById('case-id')?.textContent || null,
             traceId: document.getElementById('trace-id')?.textContent || null,
             claims: [...document.querySelectorAll('#claims tr.claim')].map(r => Number(r.dataset.index)),
             verdicts: [...document.querySelectorAll('#claims tr.claim')].map(r => r.dataset.verdict),
             marks: document.querySelectorAll('mark').length,
             errors: Object.fromEntries([...document.querySelectorAll('.error')].map(e => [e.id, e.textContent])),
             invalid: document.getElementById('invalid')?.textContent || null})"""
    )


def _to_field(b: Browser, field: str, start_key: str = "e") -> None:
    """Focus ``field`` from the gold-claims box (Escape leaves any field, ``e``) with Tab, as a
    keyboard user does."""
    b.press("Escape")
    b.press(start_key)
    for _ in range(12):
        if b.evaluate("document.activeElement.id") == field:
            return
        b.press("Tab")
    raise AssertionError(f"Tab never reached #{field}")


def _select_all(b: Browser) -> None:
    b.press("a", ctrl=True)


def test_review_three_cases_and_five_judgments_with_the_keyboard(
    chromium: str, store: tuple[Path, Path], tmp_path: Path
) -> None:
    db, evalset = store
    before = _lines(evalset)
    proposed = [cid for cid, raw in before.items() if json.loads(raw)["review"]["status"] == "proposed"]
    assert len(proposed) >= 3
    shots = tmp_path / "shots"
    shots.mkdir()
    labelled: dict[str, tuple[dict[int, str], str]] = {}
    agree: list[bool] = []  # the judge's verdict (supported or not) equals the label, per claim
    with ReviewServer("--db", str(db), "--evalset", str(evalset), "--reviewer", REVIEWER) as server:
        with Browser(chromium) as b:
            b.navigate(server.base("/cases"))
            page = _page(b)
            assert page["caseId"] == proposed[0] and page["marks"] > 0  # evidence highlighted in its chunk
            b.screenshot(shots / "review-case.png")
            b.press("a", navigates=True)  # accept as proposed

            assert _page(b)["caseId"] == proposed[1]
            b.press("e")
            _select_all(b)
            b.type_text("\n".join(GOLD_EDIT))
            _to_field(b, "split")
            _select_all(b)
            b.type_text("prod")
            unchanged = evalset.read_bytes()
            b.press("Enter", navigates=True)  # saves the edit: refused by the schema
            page = _page(b)
            assert page["caseId"] == proposed[1] and page["invalid"]
            assert "'prod' is not one of ['dev', 'holdout']" in page["errors"]["error-split"]
            assert evalset.read_bytes() == unchanged
            b.screenshot(shots / "review-invalid-edit.png")
            _to_field(b, "split")  # the page kept the edited claims; fix the split only
            _select_all(b)
            b.type_text("holdout")
            b.press("Enter", navigates=True)

            assert _page(b)["caseId"] == proposed[2]
            b.press("r")
            b.type_text("duplicate of an earlier case")
            b.press("Enter", navigates=True)  # Enter in the reason field rejects

            b.navigate(server.base("/judgments"))
            for k in range(5):
                page = _page(b)
                tid, claims = page["traceId"], page["claims"]
                assert tid and tid not in labelled
                if k == 0:
                    b.screenshot(shots / "review-judgment.png")
                keys = ["s" if (k + i) % 3 else "u" for i in range(len(claims))]
                for key in keys:
                    b.press(key)
                verdict = "f" if all(key == "s" for key in keys) else "x"
                b.press(verdict)
                agree += [
                    (v == "supported") == (key == "s") for v, key in zip(page["verdicts"], keys, strict=True)
                ]
                labelled[tid] = (
                    {
                        c: {"s": "supported", "u": "unsupported"}[key]
                        for c, key in zip(claims, keys, strict=True)
                    },
                    "faithful" if verdict == "f" else "unfaithful",
                )
                b.press("Enter", navigates=True)
            # The refused edit's page came with 422; nothing else went wrong in the page.
            assert b.diagnostics().errors() == [
                "log.error: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"
            ]
        with urllib.request.urlopen(server.base("/metrics"), timeout=10) as resp:
            metrics = resp.read().decode()
        rc, err = server.stop()
    assert rc == 0 and "stopped" in err, err

    after = _lines(evalset)
    assert set(after) == set(before)
    changed = {cid for cid in after if after[cid] != before[cid]}
    assert changed == set(proposed[:3])
    accepted, edited, rejected = (json.loads(after[c]) for c in proposed[:3])
    original = [json.loads(before[c]) for c in proposed[:3]]
    assert accepted["review"]["status"] == "reviewed" and accepted["review"]["reviewer"] == REVIEWER
    assert {k: v for k, v in accepted.items() if k != "review"} == {
        k: v for k, v in original[0].items() if k != "review"
    }
    assert edited["review"]["status"] == "reviewed"
    assert edited["gold_claims"] == GOLD_EDIT and edited["split"] == "holdout"
    assert edited["provenance"] == original[1]["provenance"]
    assert rejected["review"] == {
        "status": "rejected", "reviewer": REVIEWER, "reviewed_at": rejected["review"]["reviewed_at"],
        "reason": "duplicate of an earlier case",
    }  # fmt: skip

    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn=f"chdb://{db}")
    try:
        rows = client.query(
            "SELECT trace_id, claim_index, label, reviewer, queue FROM ragpulse.rag_reviews FINAL"
        ).result_rows
    finally:
        client.close()
    stored: dict[str, tuple[dict[int, str], str]] = {}
    for tid, idx, label, reviewer, queue in rows:
        assert reviewer == REVIEWER and queue == "judgments"
        claims, trace = stored.setdefault(tid, ({}, ""))
        if idx < 0:
            stored[tid] = (claims, label)
        else:
            claims[idx] = label
    assert stored == labelled

    def counter(queue: str, verdict: str) -> float:
        key = f'ragpulse_reviews_total{{queue="{queue}",service="policy-assistant",verdict="{verdict}"}}'
        return next((float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(key)), 0.0)

    assert [counter("cases", v) for v in ("accepted", "edited", "rejected")] == [1.0, 1.0, 1.0]
    n_claims = sum(len(c) for c, _ in labelled.values())
    assert sum(counter("judgments", v) for v in ("supported", "unsupported", "contradicted")) == n_claims
    assert sum(counter("judgments", v) for v in ("faithful", "unfaithful")) == 5
    gauge = re.search(
        r'^ragpulse_judge_human_agreement\{[^}]*service="policy-assistant"[^}]*\} (\S+)', metrics, re.M
    )
    labels = re.search(r"^ragpulse_judge_human_labels\{[^}]*\} (\S+)", metrics, re.M)
    assert gauge and labels, metrics
    assert float(labels.group(1)) == n_claims == len(agree)
    assert float(gauge.group(1)) == pytest.approx(sum(agree) / len(agree))
    for name in ("review-case.png", "review-invalid-edit.png", "review-judgment.png"):
        assert (shots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("RAGPULSE_REVIEW_SCREENSHOTS")
    if keep:
        for png in shots.iterdir():
            shutil.copy(png, Path(keep) / png.name)
