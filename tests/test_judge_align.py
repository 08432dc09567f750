"""bench/judge_align*.py's machinery (the alignment head over frozen MiniLM token states), on
the tiny random BERT tests/test_judge_minilm.py writes and on inputs the test makes.

The dev figures come from running the bench; these check what it computes: the cached
states reproduce the MiniLM tier's own four features (the bench's "+minilm" row is the
tier's head), the head's inputs mean what they say, and the jax forward pass, padded and
masked in batches, equals the head computed claim by claim in numpy.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from ragpulse.collector.judge.tiers import minilm  # noqa: E402

from tests.bench_modules import bench_modules  # noqa: E402
from tests.test_judge_minilm import tiny_dir  # noqa: E402, F401  (the tiny BERT fixture)


@pytest.fixture(scope="module")
def bench():
    with bench_modules("judge_align", "judge_align_fit", "judge_align_states") as modules:
        yield modules


CLAIMS = ["audit logs are kept for five years .", "backups run nightly , in the archive", "the archive"]
SENTENCES = [
    ["audit logs are kept for five years in the archive .", "backups run nightly ."],
    ["logs are kept in the archive ."],
    [],
]


def test_cached_states_reproduce_the_minilm_tiers_features(bench, tiny_dir) -> None:  # noqa: F811
    align, _, states_mod = bench
    enc = minilm.MiniLM(tiny_dir)
    texts = list(dict.fromkeys(CLAIMS + [s for ss in SENTENCES for s in ss]))
    arr, offsets, tokens = states_mod._encode(enc, texts)
    st = states_mod.States(
        arr,
        offsets,
        tokens,
        keep=list(range(len(CLAIMS))),
        claim=[texts.index(c) for c in CLAIMS],
        sents=[[texts.index(s) for s in ss] for ss in SENTENCES],
        n3=[len(ss) for ss in SENTENCES],
        cost={},
    )
    for t, text in enumerate(texts):
        ((want_tokens, want),) = enc.encode([text])
        assert st.tokens[t] == want_tokens
        assert np.allclose(st.text_states(t), want, atol=2e-2)  # kept as float16
    got = align.mini_features(st)
    want = minilm.Aligner(enc).features(CLAIMS, SENTENCES)
    assert got == pytest.approx(np.array(want), abs=5e-3)
    assert got[2].tolist() == [0.0] * 4


def test_head_inputs_mark_verbatim_pieces_and_unmatched_numbers(bench) -> None:
    _, fit, _ = bench
    rng = np.random.default_rng(0)
    claim_tokens = ["[CLS]", "opened", "in", "2019", ",", "2018", "[SEP]"]
    sent_tokens = ["[CLS]", "it", "opened", "in", "2018", "[SEP]"]
    cs, ss = rng.normal(size=(7, 8)), rng.normal(size=(6, 8))
    proj = rng.normal(size=(8, 3)).astype(np.float32)
    inp = fit.token_inputs((claim_tokens, cs), [(sent_tokens, ss)], proj)
    cu = cs[[1, 2, 3, 5]] / np.linalg.norm(cs[[1, 2, 3, 5]], axis=1, keepdims=True)  # "," left out
    eu = ss[1:-1] / np.linalg.norm(ss[1:-1], axis=1, keepdims=True)
    assert inp["cos"] == pytest.approx(cu @ eu.T, abs=1e-5)
    assert inp["c"] == pytest.approx(cu @ proj, abs=1e-5) and inp["e"] == pytest.approx(eu @ proj, abs=1e-5)
    # columns: best cosine, verbatim in the evidence, holds a digit, a digit piece the evidence lacks
    assert inp["fixed"][:, 0] == pytest.approx((cu @ eu.T).max(1), abs=1e-5)
    assert inp["fixed"][:, 1:].tolist() == [[1, 0, 0], [1, 0, 0], [0, 1, 1], [1, 1, 0]]
    assert fit.token_inputs((["[CLS]", ".", "[SEP]"], cs[:3]), [(sent_tokens, ss)], proj) is None
    assert fit.token_inputs((claim_tokens, cs), [], proj) is None


def _numpy_head(p: dict, c, e, cos, fixed, x) -> float:
    """The head of one claim, written out (see bench/judge_align_fit.py's docstring)."""
    att = np.exp(p["tau"] * cos - (p["tau"] * cos).max(1, keepdims=True))
    a = (att / att.sum(1, keepdims=True)) @ e
    h = np.maximum(np.concatenate([c, a, c * a, np.abs(c - a), fixed], 1) @ p["w1"] + p["b1"], 0)
    s = h @ p["w2"] + p["b2"]
    soft_min = -np.log(np.mean(np.exp(-s)))
    imp = np.exp(h @ p["u"])
    pooled = np.array([soft_min, (imp / imp.sum()) @ s, s.mean()])
    return float(x @ p["coef"] + p["intercept"] + p["pool"] @ pooled)


def test_the_batched_masked_forward_pass_is_the_head_claim_by_claim(bench) -> None:
    pytest.importorskip("jax")
    _, fit, _ = bench
    rng = np.random.default_rng(1)
    d, hid, nx = 4, 5, 3
    n = 3
    arrays = {
        "c": np.zeros((n, fit.MAX_CLAIM_TOKENS, d), np.float32),
        "e": np.zeros((n, fit.MAX_EVIDENCE_TOKENS, d), np.float32),
        "cos": np.zeros((n, fit.MAX_CLAIM_TOKENS, fit.MAX_EVIDENCE_TOKENS), np.float32),
        "fixed": np.zeros((n, fit.MAX_CLAIM_TOKENS, 4), np.float32),
        "cmask": np.zeros((n, fit.MAX_CLAIM_TOKENS), np.float32),
        "emask": np.zeros((n, fit.MAX_EVIDENCE_TOKENS), np.float32),
        "has": np.array([1, 1, 0], np.float32),
        "x": rng.normal(size=(n, nx)).astype(np.float32),
    }
    sizes = [(3, 7), (5, 2)]
    for i, (a, b) in enumerate(sizes):
        arrays["c"][i, :a], arrays["e"][i, :b] = rng.normal(size=(a, d)), rng.normal(size=(b, d))
        arrays["cos"][i, :a, :b] = rng.uniform(-1, 1, (a, b))
        arrays["fixed"][i, :a] = rng.uniform(0, 1, (a, 4))
        arrays["cmask"][i, :a], arrays["emask"][i, :b] = 1, 1
    p = {
        "tau": np.float32(3.0),
        "w1": rng.normal(size=(4 * d + 4, hid)).astype(np.float32),
        "b1": rng.normal(size=hid).astype(np.float32),
        "w2": rng.normal(size=hid).astype(np.float32),
        "b2": np.float32(0.2),
        "u": rng.normal(size=hid).astype(np.float32),
        "pool": rng.normal(size=3).astype(np.float32),
        "coef": rng.normal(size=nx).astype(np.float32),
        "intercept": np.float32(-0.1),
    }
    args = argparse.Namespace(lr=1e-3, decay=0.0, inputs=list(fit.INPUT_PARTS))
    got = fit.logits(p, arrays, np.ones(n, dtype=bool), args)
    for i, (a, b) in enumerate(sizes):
        want = _numpy_head(
            p,
            arrays["c"][i, :a],
            arrays["e"][i, :b],
            arrays["cos"][i, :a, :b],
            arrays["fixed"][i, :a],
            arrays["x"][i],
        )
        assert got[i] == pytest.approx(want, rel=1e-4, abs=1e-4)
    # without pieces only the linear term counts
    assert got[2] == pytest.approx(float(arrays["x"][2] @ p["coef"] + p["intercept"]), abs=1e-5)
