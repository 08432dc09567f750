"""``ragpulse compare``'s computation: per-variant quality with intervals, differences, latency and cost.

:func:`build_comparison` reads a service's window (:mod:`.load`), estimates
every metric of :data:`.stats.METRICS` per variant with its 95% bootstrap
interval, and the difference of each other variant against the baseline with
its interval and verdict (:mod:`.stats`); a candidate's intervals are 95%
simultaneous over the metrics it is compared on. The renderers (:mod:`.report_text`,
:mod:`.report_html`) only format the :class:`Comparison`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .load import Judged, QueryFn, Served, load_judged, load_served, pick_judge
from .simultaneous import RESAMPLES
from .stats import METRICS, MIN_PAIRS, Difference, Estimate, Family, differences, estimate, metric_by_name

__all__ = ["CompareError", "VariantSummary", "Comparison", "build_comparison", "frontier", "NO_VARIANT"]

#: How a trace without a variant is shown.
NO_VARIANT = "(none)"


class CompareError(ValueError):
    """Nothing to compare: no judged traces, an unknown variant, fewer than two variants."""


@dataclass
class VariantSummary:
    """One variant: its judged volume, per-metric estimates, and what its stored traces cost."""

    variant: str
    judged: int
    judged_sampled: bool
    estimates: dict[str, Estimate]
    served: Served | None


@dataclass
class Comparison:
    """Everything the terminal table and the HTML report show."""

    service: str
    since: str
    judge_id: str
    metric: str  # the headline metric the verdict line names
    baseline: str
    variants: list[VariantSummary]
    differences: dict[str, dict[str, Difference]] = field(default_factory=dict)  # candidate -> metric -> diff
    families: dict[str, Family] = field(default_factory=dict)  # candidate -> its intervals' level

    def summary(self, variant: str) -> VariantSummary:
        return next(v for v in self.variants if v.variant == variant)

    def method(self, candidate: str) -> str:
        """How the candidate's differences were computed, in words."""
        paired = [d for d in self.differences[candidate].values() if d.paired]
        if paired:
            return (
                f"paired bootstrap over {max(d.n for d in paired)} requests served by both variants "
                "(shadow traffic, same rag.request.id)"
            )
        return (
            "judged traces of different variants are different queries: unpaired bootstrap "
            f"(paired needs at least {MIN_PAIRS} requests served by both, marked with rag.request.id)"
        )

    def intervals(self, candidate: str) -> str:
        """What the candidate's difference intervals are, in words."""
        f = self.families[candidate]
        return (
            f"{f.confidence:.0%} simultaneous intervals over {f.metrics} metrics (each a "
            f"{100 * f.level:.2f}% interval): with identical variants, any verdict other than "
            f"'not established' has a probability of at most {1 - f.confidence:.0%}"
        )

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["methods"] = {c: self.method(c) for c in self.differences}
        out["intervals"] = {c: self.intervals(c) for c in self.differences}
        return out


def _label(variant: str) -> str:
    return variant or NO_VARIANT


def build_comparison(
    query: QueryFn,
    service: str,
    since_s: float,
    since_text: str,
    *,
    variants: Sequence[str] = (),
    judge_id: str | None = None,
    metric: str = "faithfulness",
    max_rows: int = 20_000,
    n_resamples: int = 2000,
    family_resamples: int = RESAMPLES,
    seed: int = 0,
) -> Comparison:
    """Compare the variants of ``service`` since ``since_s`` (epoch seconds); the first of
    ``variants`` is the baseline (default: the variant with the most judged traces). Estimates are
    resampled ``n_resamples`` times, each candidate's family of differences ``family_resamples``
    times (its simultaneous intervals reach further into the tails)."""
    headline = metric_by_name(metric)
    judge_id = judge_id or pick_judge(query, service, since_s)
    if judge_id is None:
        raise CompareError(f"no judged traces of service {service!r} in the last {since_text}")
    judged = load_judged(query, service, since_s, judge_id, variants, max_rows)
    missing = [v for v in variants if v not in judged]
    if missing:
        raise CompareError(f"no judged traces of variant(s) {', '.join(missing)} (judge {judge_id})")
    if len(judged) < 2:
        only = ", ".join(_label(v) for v in judged) or "none"
        raise CompareError(f"need two variants with judged traces to compare; found {only}")
    served = load_served(query, service, since_s, variants)
    order = list(variants) or sorted(judged, key=lambda v: (-judged[v].n, v))
    summaries = [_summary(judged[v], served.get(v), n_resamples, seed) for v in order]
    cmp = Comparison(service, since_text, judge_id, headline.name, order[0], summaries)
    base = judged[order[0]]
    for cand in order[1:]:
        cmp.differences[cand], cmp.families[cand] = differences(
            METRICS, judged[cand].values, base.values,
            cand_keys=judged[cand].request_ids, base_keys=base.request_ids, n_resamples=family_resamples, seed=seed,
        )  # fmt: skip
    return cmp


def _summary(j: Judged, served: Served | None, n_resamples: int, seed: int) -> VariantSummary:
    estimates = {m.name: estimate(j.values[m.name], n_resamples=n_resamples, seed=seed) for m in METRICS}
    return VariantSummary(j.variant, j.n, j.sampled, estimates, served)


def frontier(cmp: Comparison) -> list[str]:
    """The variants on the cost-quality frontier of the headline metric: no other variant is at
    most as expensive per query and at least as good, and strictly one of the two."""
    better = metric_by_name(cmp.metric).better
    points = []
    for v in cmp.variants:
        mean = v.estimates[cmp.metric].mean
        cost = v.served.cost_per_query if v.served else None
        if mean is not None and cost is not None:
            points.append((v.variant, cost, mean if better == "higher" else -mean))
    on = []
    for name, cost, good in points:
        dominated = any(c <= cost and g >= good and (c < cost or g > good) for n, c, g in points if n != name)
        if not dominated:
            on.append((cost, name))
    return [name for _, name in sorted(on)]
