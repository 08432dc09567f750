"""The terminal table of ``ragpulse compare``: one row per metric, one column per variant, then the differences."""

from __future__ import annotations

from .load import STAGES
from .run import NO_VARIANT, Comparison
from .stats import METRICS, Difference, Estimate

__all__ = ["render_text", "fmt_interval", "fmt_cost"]


def fmt_interval(mean: float | None, ci: tuple[float, float] | None, signed: bool = False) -> str:
    """``0.912 [0.901, 0.923]`` (``n/a`` without a value)."""
    if mean is None:
        return "n/a"
    f = "{:+.3f}" if signed else "{:.3f}"
    text = f.format(mean)
    if ci is not None:
        text += f" [{f.format(ci[0])}, {f.format(ci[1])}]"
    return text


def fmt_cost(cost: float | None) -> str:
    """A cost per query in USD, or ``unknown`` (no priced trace)."""
    return "unknown" if cost is None else f"${cost:.6f}"


def _name(variant: str) -> str:
    return variant or NO_VARIANT


def _est(e: Estimate) -> str:
    return fmt_interval(e.mean, e.ci)


def _diff(d: Difference) -> str:
    return f"{fmt_interval(d.delta, d.ci, signed=True)} {d.verdict or ''}".rstrip()


def render_text(cmp: Comparison) -> str:
    """The comparison as a plain-text table with a verdict line per candidate variant."""
    names = [v.variant for v in cmp.variants]
    cands = list(cmp.differences)
    head = ["metric", *(f"{_name(v.variant)} (n={v.judged})" for v in cmp.variants)]
    head += [f"{_name(c)} - {_name(cmp.baseline)}" for c in cands]
    rows = [head]
    for m in METRICS:
        row = [f"{m.title} ({m.better} is better)"]
        row += [_est(cmp.summary(v).estimates[m.name]) for v in names]
        row += [_diff(cmp.differences[c][m.name]) for c in cands]
        rows.append(row)
    rows.append(["", *[""] * (len(head) - 1)])
    for _, stage in STAGES:
        row = [f"latency {stage} p50 / p95 ms"]
        for v in cmp.variants:
            lat = v.served.latency_ms.get(stage) if v.served else None
            row.append("n/a" if lat is None else f"{lat[0]:.1f} / {lat[1]:.1f}")
        rows.append(row + [""] * len(cands))
    row = ["cost per query (USD)"]
    for v in cmp.variants:
        s = v.served
        row.append("n/a" if s is None else f"{fmt_cost(s.cost_per_query)} ({s.priced}/{s.traces} priced)")
    rows.append(row + [""] * len(cands))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        f"ragpulse compare: service {cmp.service}, last {cmp.since}, judge {cmp.judge_id}, "
        f"baseline {_name(cmp.baseline)}; per variant 95% bootstrap intervals, "
        "differences 95% simultaneous over the metrics of each candidate"
    ]
    if any(v.judged_sampled for v in cmp.variants):
        lines.append("(variants with more judged traces than --max-rows are a trace-id hash sample of them)")
    lines.append("")
    for r in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    lines.append("")
    for c in cands:
        d = cmp.differences[c][cmp.metric]
        lines.append(f"{_name(c)} vs {_name(cmp.baseline)}: {cmp.method(c)}")
        lines.append(f"  {cmp.intervals(c)}")
        lines.append(f"  verdict on {cmp.metric}: {_verdict_sentence(c, cmp.baseline, d)}")
    return "\n".join(lines)


def _verdict_sentence(cand: str, base: str, d: Difference) -> str:
    if d.delta is None:
        return "no values to compare"
    diff = fmt_interval(d.delta, d.ci, signed=True)
    if d.verdict in ("better", "worse"):
        return f"{_name(cand)} is {d.verdict} than {_name(base)} ({diff}, the interval excludes 0)"
    return f"not established ({diff}, the interval contains 0)"
