"""The self-contained HTML report of ``ragpulse compare``: tables and the cost-quality frontier (inline SVG).

One file with no scripts, fonts or links to fetch, so it can be mailed or
attached to a change request. The frontier plots each variant's cost per
query against its headline metric with the metric's 95% interval; the
variants no other one beats on both (cheaper or as cheap, and better or as
good) are joined by the frontier line.
"""

from __future__ import annotations

from html import escape

from .load import STAGES
from .report_text import fmt_cost, fmt_interval
from .run import NO_VARIANT, Comparison, frontier
from .stats import METRICS, metric_by_name

__all__ = ["render_html"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#f4f4f4}
.better{background:#dff5df}.worse{background:#fadcdc}.note{color:#555}
"""

_W, _H, _PAD = 640, 380, 60


def _name(v: str) -> str:
    return escape(v or NO_VARIANT)


def _quality_table(cmp: Comparison) -> str:
    cands = list(cmp.differences)
    head = "".join(f"<th>{_name(v.variant)} (n={v.judged})</th>" for v in cmp.variants)
    head += "".join(f"<th>{_name(c)} &minus; {_name(cmp.baseline)}</th>" for c in cands)
    rows = []
    for m in METRICS:
        cells = "".join(
            f"<td>{fmt_interval(v.estimates[m.name].mean, v.estimates[m.name].ci)}</td>" for v in cmp.variants
        )
        for c in cands:
            d = cmp.differences[c][m.name]
            cls = f' class="{d.verdict}"' if d.verdict in ("better", "worse") else ""
            cells += f"<td{cls}>{fmt_interval(d.delta, d.ci, signed=True)} {escape(d.verdict or '')}</td>"
        rows.append(f"<tr><td>{escape(m.title)} ({m.better} is better)</td>{cells}</tr>")
    return f"<table><tr><th>metric</th>{head}</tr>{''.join(rows)}</table>"


def _served_table(cmp: Comparison) -> str:
    head = "".join(f"<th>{_name(v.variant)}</th>" for v in cmp.variants)
    rows = []
    for _, stage in STAGES:
        cells = ""
        for v in cmp.variants:
            lat = v.served.latency_ms.get(stage) if v.served else None
            cells += "<td>n/a</td>" if lat is None else f"<td>{lat[0]:.1f} / {lat[1]:.1f}</td>"
        rows.append(f"<tr><td>latency {stage} p50 / p95 (ms)</td>{cells}</tr>")
    cost = "".join(
        "<td>n/a</td>"
        if v.served is None
        else f"<td>{fmt_cost(v.served.cost_per_query)} ({v.served.priced} of {v.served.traces} priced)</td>"
        for v in cmp.variants
    )
    traces = "".join(f"<td>{v.served.traces if v.served else 0}</td>" for v in cmp.variants)
    rows += [f"<tr><td>stored traces</td>{traces}</tr>", f"<tr><td>cost per query (USD)</td>{cost}</tr>"]
    return f"<table><tr><th></th>{head}</tr>{''.join(rows)}</table>"


def _frontier_svg(cmp: Comparison) -> str:
    spec = metric_by_name(cmp.metric)
    pts = []
    for v in cmp.variants:
        e = v.estimates[cmp.metric]
        cost = v.served.cost_per_query if v.served else None
        if e.mean is not None and cost is not None:
            lo, hi = e.ci if e.ci else (e.mean, e.mean)
            pts.append((v.variant, cost, e.mean, lo, hi))
    if not pts:
        return '<p class="note">No variant has both a priced trace and a value of the metric: nothing to plot.</p>'
    xs = [p[1] for p in pts]
    ys = [y for p in pts for y in p[3:]]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    xpad, ypad = (x1 - x0) * 0.1 or max(x1, 1e-9) * 0.1, (y1 - y0) * 0.1 or 0.05
    x0, x1, y0, y1 = max(0.0, x0 - xpad), x1 + xpad, y0 - ypad, y1 + ypad

    def sx(x: float) -> float:
        return _PAD + (x - x0) / (x1 - x0) * (_W - 2 * _PAD)

    def sy(y: float) -> float:
        return _H - _PAD - (y - y0) / (y1 - y0) * (_H - 2 * _PAD)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" role="img" '
        f'aria-label="cost-quality frontier">',
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#333"/>',
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#333"/>',
        f'<text x="{_W / 2}" y="{_H - 15}" text-anchor="middle">cost per query (USD)</text>',
        f'<text x="15" y="{_H / 2}" transform="rotate(-90 15 {_H / 2})" text-anchor="middle">'
        f"{escape(spec.title)} ({spec.better} is better)</text>",
        f'<text x="{_PAD}" y="{_H - _PAD + 15}" font-size="11">{x0:.6f}</text>',
        f'<text x="{_W - _PAD}" y="{_H - _PAD + 15}" font-size="11" text-anchor="end">{x1:.6f}</text>',
        f'<text x="{_PAD - 5}" y="{_H - _PAD}" font-size="11" text-anchor="end">{y0:.3f}</text>',
        f'<text x="{_PAD - 5}" y="{_PAD + 5}" font-size="11" text-anchor="end">{y1:.3f}</text>',
    ]
    on = frontier(cmp)
    by_name = {p[0]: p for p in pts}
    if len(on) > 1:
        line = " ".join(f"{sx(by_name[n][1]):.1f},{sy(by_name[n][2]):.1f}" for n in on)
        parts.append(f'<polyline points="{line}" fill="none" stroke="#2a7" stroke-width="2"/>')
    for name, cost, mean, lo, hi in pts:
        x = sx(cost)
        color = "#2a7" if name in on else "#c44"
        parts += [
            f'<line x1="{x:.1f}" y1="{sy(lo):.1f}" x2="{x:.1f}" y2="{sy(hi):.1f}" stroke="{color}"/>',
            f'<circle cx="{x:.1f}" cy="{sy(mean):.1f}" r="5" fill="{color}"/>',
            f'<text x="{x + 8:.1f}" y="{sy(mean) - 6:.1f}" font-size="12">{_name(name)}</text>',
        ]
    parts.append("</svg>")
    return "".join(parts)


def render_html(cmp: Comparison) -> str:
    """The whole report as one HTML document."""
    verdicts = []
    for c in cmp.differences:
        d = cmp.differences[c][cmp.metric]
        verdicts.append(
            f"<li><b>{_name(c)}</b> vs {_name(cmp.baseline)} on {escape(cmp.metric)}: "
            f"{fmt_interval(d.delta, d.ci, signed=True)} &rarr; <b>{escape(d.verdict or 'n/a')}</b>"
            f'<br><span class="note">{escape(cmp.method(c))}; {escape(cmp.intervals(c))}</span></li>'
        )
    on = ", ".join(_name(v) for v in frontier(cmp)) or "none"
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>ragpulse compare: {escape(cmp.service)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Variants of {escape(cmp.service)}</h1>"
        f'<p class="note">Last {escape(cmp.since)}, judge {escape(cmp.judge_id)}, baseline '
        f"{_name(cmp.baseline)}; means with 95% bootstrap intervals; the differences of each variant "
        "against the baseline with 95% simultaneous intervals over all the metrics compared.</p>"
        f"<ul>{''.join(verdicts)}</ul>"
        f"<h2>Cost-quality frontier</h2>{_frontier_svg(cmp)}"
        f'<p class="note">On the frontier (nothing else is as cheap and as good): {on}.</p>'
        f"<h2>Quality</h2>{_quality_table(cmp)}"
        f"<h2>Latency and cost</h2>{_served_table(cmp)}"
        "</body></html>\n"
    )
