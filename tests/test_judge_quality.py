"""The local judge's claim-support quality on AttributionBench dev, cross-validated.

The same procedure as bench/judge_quality.py on its first split (deterministic):
the feature model is refit on four folds and scored on the fifth, so the figure
is out-of-sample. Guards against feature changes that lose quality.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("judge_quality_bench", ROOT / "bench" / "judge_quality.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cross_validated_macro_f1_beats_the_bar_and_the_lexical_baseline() -> None:
    jq = _bench()
    if not jq.DEFAULT_DATA.is_file():
        pytest.fail(f"dev data missing at {jq.DEFAULT_DATA}")
    rows = jq.load_rows(jq.DEFAULT_DATA)
    feats, overlaps = zip(*(jq.featurise(r) for r in rows), strict=True)
    gold = [1 if r["attribution_label"] == "attributable" else 0 for r in rows]
    idx = list(range(len(rows)))
    random.Random(0).shuffle(idx)
    pred = [0] * len(rows)
    for k in range(5):
        test = set(idx[k::5])
        train = [i for i in idx if i not in test]
        p = jq._prob(*jq._fit([feats[i] for i in train], [gold[i] for i in train]))
        for i in test:
            pred[i] = 1 if jq._aggregate(feats[i], p) >= 0.5 else 0
    cv = jq.macro_f1(pred, gold)
    baseline, _ = jq._best_threshold(list(overlaps), gold)
    assert cv > 0.70
    assert cv > baseline + 0.03
