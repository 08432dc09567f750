"""bench/judge_quality.py's measuring machinery, on data the test makes.

The figures on the real development data come from running the bench (it reads
``../shared/data``); these tests check that what it computes is right: the metrics
against their definitions, the isotonic calibration, the logistic fit, grouped
folds, and a full cross-validation run that must find a planted signal and
calibrate it.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from ragpulse.collector.judge.local.claim_features import CLAIM_FEATURES

from tests.bench_modules import bench_modules


@pytest.fixture(scope="module")
def bench():
    with bench_modules("judge_quality", "judge_metrics") as modules:
        yield modules


def test_binary_metrics_match_their_definitions(bench) -> None:
    _, jm = bench
    gold = np.array([1, 1, 1, 0, 0, 0, 0, 0])
    pred = np.array([1, 1, 0, 1, 0, 0, 0, 0])
    # recall(1) = 2/3, recall(0) = 4/5; F1(1) = 4/6, F1(0) = 8/10
    assert jm.balanced_accuracy(pred, gold) == pytest.approx((2 / 3 + 4 / 5) / 2)
    assert jm.f1(pred, gold) == pytest.approx(4 / 6)
    assert jm.macro_f1(pred, gold) == pytest.approx((4 / 6 + 8 / 10) / 2)
    assert np.isnan(jm.balanced_accuracy(pred, np.ones(8)))


def test_auroc_equals_the_pairwise_definition(bench) -> None:
    _, jm = bench
    rng = np.random.default_rng(3)
    score = rng.integers(0, 6, 60) / 5  # ties on purpose
    gold = rng.integers(0, 2, 60)
    pos, neg = score[gold == 1], score[gold == 0]
    pairs = [(1.0 if p > n else 0.5 if p == n else 0.0) for p, n in product(pos, neg)]
    assert jm.auroc(score, gold) == pytest.approx(sum(pairs) / len(pairs))


def test_ece_and_reliability(bench) -> None:
    _, jm = bench
    prob = np.array([0.05, 0.05, 0.95, 0.95, 0.55, 0.55])
    gold = np.array([0, 0, 1, 1, 1, 0])
    assert jm.ece(prob, gold) == pytest.approx((2 * 0.05 + 2 * 0.05 + 2 * 0.05) / 6)
    cells = jm.reliability(prob, gold)
    assert [c for *_, c in cells] == [2, 2, 2]
    assert cells[1][2] == 0.5


def test_ece_floor_is_the_ece_of_labels_drawn_from_the_probabilities(bench) -> None:
    _, jm = bench
    prob = np.random.default_rng(3).random(300)
    median, p95 = jm.ece_floor(prob, draws=200, seed=7)
    labels = np.random.default_rng(7).random((200, len(prob))) < prob
    direct = [jm.ece(prob, row) for row in labels]
    assert median == pytest.approx(float(np.median(direct)))
    assert p95 == pytest.approx(float(np.quantile(direct, 0.95)))
    assert 0 < median < p95
    # The floor shrinks with the set: about 1/sqrt(n).
    big_median, _ = jm.ece_floor(np.random.default_rng(3).random(30000), draws=50)
    assert big_median < median / 5


def test_group_bootstrap_draws_whole_groups(bench) -> None:
    _, jm = bench
    rng = np.random.default_rng(4)
    groups = np.repeat(np.arange(40), rng.integers(1, 6, 40))
    sizes = np.bincount(groups)

    def whole(rows: np.ndarray) -> float:
        counts = np.bincount(groups[rows], minlength=len(sizes))
        return float(np.all(counts % sizes == 0))

    assert jm.group_bootstrap(whole, groups, draws=200) == (1.0, 1.0)
    value = rng.random(40)[groups]
    lo, hi = jm.group_bootstrap(lambda rows: float(value[rows].mean()), groups, draws=500)
    assert lo < value.mean() < hi
    # A shared generator continues one stream of draws; an int seed restarts it.
    gen = np.random.default_rng(9)
    first = jm.group_bootstrap(lambda rows: float(value[rows].mean()), groups, draws=50, seed=gen)
    second = jm.group_bootstrap(lambda rows: float(value[rows].mean()), groups, draws=50, seed=gen)
    assert first != second
    assert first == jm.group_bootstrap(lambda rows: float(value[rows].mean()), groups, draws=50, seed=9)


def test_isotonic_map_is_monotone_and_calibrates(bench) -> None:
    jq, jm = bench
    rng = np.random.default_rng(0)
    true_p = rng.uniform(0, 1, 4000)
    y = (rng.uniform(0, 1, 4000) < true_p).astype(int)
    raw = true_p**3  # monotone but badly calibrated
    xs, ys = jq.isotonic(raw, y, np.ones(len(y)))
    assert all(b >= a for a, b in zip(ys, ys[1:], strict=False))
    assert all(b >= a for a, b in zip(xs, xs[1:], strict=False))
    cal = np.interp(raw, xs, ys)
    assert jm.ece(raw, y) > 0.15
    assert jm.ece(cal, y) < 0.03


def test_logistic_fit_recovers_a_planted_model(bench) -> None:
    _, jm = bench
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5000, 3))
    s = 2.0 * x[:, 0] - 1.0 * x[:, 1] + 0.5
    y = (rng.uniform(size=5000) < 1 / (1 + np.exp(-s))).astype(int)
    coef, b = jm.fit_logistic(x, y, l2=1e-3)
    assert coef == pytest.approx([2.0, -1.0, 0.0], abs=0.2)
    assert b == pytest.approx(0.5, abs=0.15)


def test_folds_keep_groups_together_and_spread_them(bench) -> None:
    _, jm = bench
    folds = [jm.fold_of(f"g{i}", 5) for i in range(500)]
    assert folds == [jm.fold_of(f"g{i}", 5) for i in range(500)]
    counts = np.bincount(folds, minlength=5)
    assert counts.min() > 60
    assert jm.fold_of("g1", 5, seed=1) in range(5)


def _synthetic_items(n: int = 1600) -> list[dict]:
    """Items shaped like judge_dev_data's: one informative feature (``cov``), four sources
    with different base rates, groups of four claims sharing a label tendency."""
    rng = np.random.default_rng(7)
    sources = ("attributionbench", "factscore", "factcheck-gpt", "wice")
    items = []
    cov = CLAIM_FEATURES.index("cov")
    for k in range(n):
        src = sources[k % 4]
        x = rng.uniform(0, 1, len(CLAIM_FEATURES)) * 0.1
        x[CLAIM_FEATURES.index("num_miss")] = 0.0
        x[cov] = rng.uniform()
        y = int(rng.uniform() < 0.1 + 0.8 * x[cov])
        items.append(
            {
                "source": src,
                "group": f"{src}:{k // 16}",
                "response": f"{src}:{k // 4}",
                "label": y,
                "x": list(x),
                "v1": 0.0,
                "overlap": float(x[cov]),
                "neg": False,
            }
        )
    return items


def test_cross_validation_finds_the_signal_and_calibrates_it(bench) -> None:
    jq, jm = bench
    data = jq.Data(_synthetic_items(), folds=5)
    cv = jq.cross_validate(data, 5)
    p = cv["p"]
    assert ((p >= 0) & (p <= 1)).all()
    oracle = jm.auroc(data.x[:, CLAIM_FEATURES.index("cov")], data.y)  # the planted signal itself
    assert jm.auroc(p, data.y) > oracle - 0.02
    assert jm.ece(p, data.y) < 0.06
    assert set(np.round(cv["thr"], 2)) <= set(jq.THRESHOLDS)
    assert (cv["weak"] <= cv["thr"]).all()


@pytest.fixture(scope="module")
def responses():
    with bench_modules("judge_responses") as (module,):
        yield module


def test_composed_answers_have_k_claims_from_one_pool_and_the_asked_share_hallucinated(responses) -> None:
    rng = np.random.default_rng(5)
    supported = rng.random(900) < 0.7
    pool = np.array([f"r{i // 30}" for i in range(900)])
    answers = responses.compose(supported, pool, k=4, prevalence=0.2, n=3000, seed=1)
    assert len(answers) == 3000
    for rows, hallucinated in answers:
        assert len(rows) == len(set(rows.tolist())) == 4
        assert len(set(pool[rows])) == 1
        assert int((~supported[rows]).sum()) == int(hallucinated)
    share = np.mean([h for _, h in answers])
    assert 0.17 < share < 0.23
    again = responses.compose(supported, pool, k=4, prevalence=0.2, n=3000, seed=1)
    assert all((a == b).all() and h == g for (a, h), (b, g) in zip(answers, again, strict=True))
    one = responses.compose(supported, pool, k=1, prevalence=1.0, n=50)
    assert all(rows.dtype.kind == "i" and not supported[rows].any() for rows, _ in one)


def test_composition_pools_and_its_limits(responses) -> None:
    folds = np.array([0, 1, 0, 1, 2, 2])
    # One claim per record: the fold is the pool; many claims per record: the record is.
    assert list(responses.pools(np.array(list("abcdef")), folds)) == [f"fold {f}" for f in folds]
    records = np.array(["a"] * 4 + ["b"] * 4)
    assert list(responses.pools(records, np.zeros(8, dtype=int))) == list(records)
    with pytest.raises(ValueError, match="answers of 3"):
        responses.compose(np.array([True, True, False]), np.array(["p"] * 3), 3, 0.0, 10)
    with pytest.raises(ValueError):
        responses.compose(np.array([True]), np.array(["p"]), 1, 1.5, 10)
    assert responses.flag_everything_f1(0.2) == pytest.approx(1 / 3)


def _real_answers(responses, n: int = 60, seed: int = 0) -> list:
    """Answers of every real-answer set whose gold label is planted: hallucinated exactly when
    the mean claim score is below 0.55 (each answer has an unsupported claim)."""
    rng = np.random.default_rng(seed)
    out = []
    for source in responses.REAL_SETS:
        for i in range(n):
            k = int(rng.integers(2, 7))
            probs = [float(rng.uniform(0.5, 1.0)) for _ in range(k - 1)] + [float(rng.uniform(0.0, 0.5))]
            verdicts = ["supported"] * (k - 1) + ["unsupported"]
            mean = np.mean([max(p, 0.5) for p in probs[:-1]] + [probs[-1]])
            out.append(
                responses.Answer(source, f"g{i // 3}", bool(mean < 0.55), tuple(verdicts), tuple(probs), 0.5)
            )
    return out


def test_the_response_decision_is_fit_across_sets_and_written_for_the_judge(responses, tmp_path) -> None:
    from ragpulse.collector.judge.local.response import load_response_rule

    answers = _real_answers(responses)
    stats = responses.Stats(answers)
    assert responses.fit_response(stats) == pytest.approx(0.55)
    rules = responses.compare_rules(stats)
    chosen = rules[responses.CHOSEN]
    assert chosen["in_sample"] == pytest.approx([1.0] * len(responses.REAL_SETS))
    assert min(chosen["cv"]) > 0.95 and min(chosen["left_out"]) > 0.95
    assert max(rules[responses.OLD]["in_sample"]) == pytest.approx(0.5)  # every answer flagged
    path = tmp_path / "response.json"
    assert responses.write_response_weights(stats, path) == pytest.approx(0.55)
    rule = load_response_rule(path)
    flags = [rule.hallucinated(a.verdicts, a.probs, a.threshold) for a in answers]
    assert flags == [a.gold for a in answers]


def test_claim_sets_become_answers_with_the_judges_verdicts() -> None:
    with bench_modules("judge_dev_data") as (dev,):
        claim_set_answers = dev.claim_set_answers
    items = [
        {"source": "factscore", "group": "ada", "label": 1},
        {"source": "factscore", "group": "ada", "label": 0},
        {"source": "factscore", "group": "ada", "label": 0},
        {"source": "wice", "group": "w", "label": 1},
    ]
    prob = np.array([0.3, 0.2, 0.6, 0.9])
    score = np.array([1.0, 0.2, 0.0, 0.9])  # the first: one chunk supports it; the third: a conflict
    (answer,) = claim_set_answers(
        items, [[0, 1, 2], [3]], prob, score, np.full(4, 0.5), np.array([False, False, True, False])
    )
    assert answer.verdicts == ("supported", "unsupported", "contradicted")
    assert answer.probs == pytest.approx((0.3, 0.2, 0.6))
    assert answer.gold and answer.source == "factscore" and answer.group == "ada"
