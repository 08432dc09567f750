"""The judge refit on synthetic labels: the case of issue 44, and what promotes.

The synthetic domain is the one the issue measured: a base claim head that is overconfident on
the domain (it scores supported claims about 0.7 and unsupported ones about 0.4, a scale the
packaged response rule's ``mean_below`` of 0.63 was fit on), and a team whose answers hold six
claims, half of them hallucinated with two unsupported claims. Refit on the labels, the claim
head recalibrates to the domain's high support rate and its verdict threshold moves up to about
0.85; under the old ``mean_below`` almost no answer's mean claim score falls below it and
answer-level recall collapses. The refit of the whole decision moves the response rule with the
head. The arrays stand in for read traces (:mod:`ragpulse.collector.judge.local.refit.data`);
the parity of those arrays with the judge is ``tests/test_judge_refit_parity.py``'s.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from ragpulse.collector.judge.local.claim_features import CLAIM_FEATURES
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.local.refit import Base, run, weights_text
from ragpulse.collector.judge.local.refit.data import Claims, LabelSet
from ragpulse.collector.judge.local.refit.decision import MEAN_GRID, THRESHOLDS, Minimums, fit_decision
from ragpulse.collector.judge.local.refit.head import Decision, Head
from ragpulse.collector.judge.local.refit.promote import METRICS, Gain, decide, gains, held_out

D = len(CLAIM_FEATURES)
CAPS = {"number_cap": 0.14, "joint_number_cap": 0.5, "ordinal_number_cap": 0.28}


def base_decision(steepness: float = 6.0) -> Decision:
    """A base decision whose claim probability is ``sigmoid(steepness * (s - 0.5))`` of the first
    feature ``s``, threshold 0.5, the packaged rule's ``mean_below`` 0.63."""
    coef = np.zeros(D)
    coef[0] = steepness
    return Decision(Head(coef, -steepness / 2, ((), ()), 0.5, dict(CAPS), 0.2), 0.63)


def synthetic(
    answers: int, seed: int, supported: float = 0.65, unsupported: float = 0.45, sd: float = 0.12
) -> LabelSet:
    """``answers`` traces of six labelled claims, every other one hallucinated (two claims not
    supported); the judge's claims are the labelled ones; each trace its own group."""
    rng = np.random.default_rng(seed)
    y = np.ones((answers, 6), dtype=int)
    y[1::2, :2] = 0
    y = y.ravel()
    x = np.zeros((len(y), D))
    x[:, 0] = np.where(y == 1, rng.normal(supported, sd, len(y)), rng.normal(unsupported, sd, len(y)))
    no = np.zeros(len(y), dtype=bool)
    trace = np.repeat(np.arange(answers), 6)
    labelled = Claims(x, no, ~no, no, no, no, no, no, trace, y)
    ids = np.array([f"s{seed}-{i}" for i in range(answers)], dtype=object)
    gold = np.arange(answers) % 2
    return LabelSet(
        ids, ids.copy(), gold, labelled, replace(labelled, y=np.full(len(y), -1)), np.ones(answers, bool)
    )


def recall_and_specificity(decision: Decision, ls: LabelSet) -> tuple[float, float]:
    flags = decision.answers(ls.judged, len(ls.trace_ids))
    hallucinated = ls.gold == 1
    return float(flags[hallucinated].mean()), float((~flags[~hallucinated]).mean())


def test_a_refit_that_moves_the_threshold_moves_the_response_rule_and_keeps_recall() -> None:
    base = base_decision()
    fit = fit_decision(synthetic(200, seed=1), base, Minimums())
    held = synthetic(400, seed=2)
    assert fit.head_refit and fit.rule_refit
    assert fit.decision.head.threshold >= 0.75  # the claim head's scale moved up
    base_recall, base_spec = recall_and_specificity(base, held)
    head_only = Decision(fit.decision.head, base.mean_below)
    collapsed, _ = recall_and_specificity(head_only, held)
    recall, spec = recall_and_specificity(fit.decision, held)
    # The case: the refit head under the old rule loses most hallucination alerts ...
    assert base_recall > 0.5 and collapsed < 0.25 * base_recall, (base_recall, collapsed)
    # ... the refit decision does not: the rule moved with the head.
    assert fit.decision.mean_below > base.mean_below + 0.1
    assert recall >= base_recall - 0.05 and spec >= base_spec - 0.05, (recall, base_recall, spec, base_spec)


def test_with_too_few_answer_labels_the_rule_still_moves_with_the_head() -> None:
    """No trace labels and answers too few for the rule's own fit: mean_below is carried over
    to the new head (the value whose verdicts agree most with the base decision's)."""
    base = base_decision()
    ls = synthetic(60, seed=3)
    fit = fit_decision(ls, base, Minimums(answers=1000))
    assert fit.head_refit and not fit.rule_refit
    assert fit.decision.mean_below > base.mean_below
    collapsed, _ = recall_and_specificity(
        Decision(fit.decision.head, base.mean_below), synthetic(400, seed=4)
    )
    recall, _ = recall_and_specificity(fit.decision, synthetic(400, seed=4))
    assert recall > 2 * collapsed + 0.2, (recall, collapsed)


def test_a_refit_that_only_improves_ece_is_not_written(tmp_path) -> None:
    """Separable claims that the base head scores 0.4-0.6 (every verdict right, ECE about 0.4):
    the refit recalibrates them (ECE better beyond noise) and changes no verdict, so it is refused
    and nothing is fit to write."""
    base_dec = base_decision(steepness=1.0)
    ls = synthetic(200, seed=5, supported=0.8, unsupported=0.2, sd=0.05)
    base = Base({}, base_dec, "1", "synthetic base")
    outcome = run(ls, base, Minimums(), folds=5)
    cmp = outcome.comparison
    assert cmp.gains["ECE"].verdict == "better" and cmp.gains["ECE"].gain > 0.3
    assert cmp.held.figures("base")[METRICS[0]] == 1.0 == cmp.held.figures("refit")[METRICS[0]]
    assert not cmp.promote and outcome.fit is None
    assert cmp.reason.endswith("(ECE does, and ECE alone never promotes)")
    assert [share for share, _ in outcome.curve] == [0.25, 0.5, 1.0]


def _gain(verdict: str, gain: float = 0.0) -> Gain:
    return Gain(gain, gain - 0.01, gain + 0.01, verdict)


@pytest.mark.parametrize(
    ("answer", "claim", "ece", "promote", "why"),
    [
        ("better", "within noise", "within noise", True, "answer-level balanced accuracy"),
        ("within noise", "better", "worse", True, "claim balanced accuracy"),
        ("worse", "better", "better", False, "the answer-level decision is worse beyond noise"),
        ("better", "worse", "better", False, "claim balanced accuracy is worse beyond noise"),
        ("within noise", "within noise", "better", False, "(ECE does, and ECE alone never promotes)"),
        ("within noise", "not measured", "not measured", False, "neither the answer-level decision"),
        ("not measured", "better", "better", False, "the answer-level decision cannot be measured"),
    ],
)
def test_what_promotes(answer: str, claim: str, ece: str, promote: bool, why: str) -> None:
    ok, reason = decide({METRICS[0]: _gain(answer), METRICS[1]: _gain(claim), METRICS[2]: _gain(ece)})
    assert ok == promote and why in reason


def test_the_bootstrap_sees_no_gain_between_equal_decisions_and_resamples_groups() -> None:
    base = base_decision()
    ls = synthetic(120, seed=6)
    h = held_out(ls, base, Minimums(claims=10**6, answers=10**6), k=5)  # nothing is refit
    g = gains(h)
    assert all(v.gain == 0 and v.low == 0 and v.high == 0 for v in g.values())
    assert {v.verdict for v in g.values()} == {"within noise"}
    assert len(h.answer_gold) == 120 and len(h.claim_gold) == 720


def test_the_grids_cover_the_whole_range() -> None:
    assert THRESHOLDS[0] == 0.01 and THRESHOLDS[-1] == 0.99 and len(THRESHOLDS) == 99
    assert MEAN_GRID[0] == 0.0 and MEAN_GRID[-1] == 1.0


def test_a_written_refit_holds_the_whole_decision_and_the_judge_reads_it(tmp_path) -> None:
    from ragpulse.collector.judge.local.refit import read_base

    base = read_base(None)
    ls = synthetic(100, seed=7)
    fit = fit_decision(ls, base.decision, Minimums())
    cmp = run(ls, base, Minimums(), folds=5, curve=False).comparison
    path = tmp_path / "w.json"
    path.write_text(weights_text(base, fit, ls, cmp, "local-x"))
    data = json.loads(path.read_text())
    assert data["response"] == {"version": "1-refit", "mean_below": fit.decision.mean_below}
    assert data["threshold"] == fit.decision.head.threshold and data["version"] == "4-refit"
    assert data["refit"]["labels"]["claims"] == 600 and set(data["refit"]["held_out"]) == set(METRICS)
    judge = LocalJudge(claim_weights=str(path))
    assert judge.threshold == fit.decision.head.threshold
    assert judge.response_rule.mean_below == fit.decision.mean_below
    assert judge.judge_id != LocalJudge().judge_id
