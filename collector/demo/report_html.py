"""The HTML rendering of a :class:`~ragpulse.collector.report.Report`: one self-contained page.

Charts are inline SVG drawn here (no script, no CDN, nothing fetched), so the
file opens offline and can be attached to a ticket. The page also embeds the
report's data as JSON (``<script type="application/json"
id="ragpulse-report-data">``) and each chart element carries its figure in a
``data-*`` attribute, so a test or a script can read exactly what is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape

from ..contract import SCORE_NAMES
from .report import Report
from .report_sessions import SessionsSummary
from .report_text import fmt_score

__all__ = ["render_html"]

_COLORS = {
    "faithfulness": "#1f77b4",
    "citation_correctness": "#ff7f0e",
    "citation_completeness": "#2ca02c",
    "answer_relevance": "#9467bd",
    "context_precision": "#8c564b",
    "context_utilization": "#7f7f7f",
}
_MODE_COLORS = {
    "healthy": "#2ca02c",
    "retrieval": "#ff7f0e",
    "generation": "#d62728",
    "both": "#8c564b",
    "abstain": "#1f77b4",
}


def _histogram(name: str, bins: list[int]) -> str:
    w, h, pad = 260, 120, 18
    top = max(bins) or 1
    bw = (w - 2 * pad) / len(bins)
    parts = [
        f'<svg class="hist" data-score="{name}" width="{w}" height="{h + 30}" viewBox="0 0 {w} {h + 30}" '
        f'role="img" aria-label="{escape(name)} distribution">',
        f'<text x="{pad}" y="12" class="t">{escape(name.replace("_", " "))}</text>',
    ]
    for i, n in enumerate(bins):
        bh = (h - 24) * n / top
        x = pad + i * bw
        parts.append(
            f'<rect data-bin="{i}" data-count="{n}" x="{x + 1:.1f}" y="{h - bh:.1f}" width="{bw - 2:.1f}" '
            f'height="{bh:.1f}" fill="{_COLORS.get(name, "#555")}"><title>{i / 10:.1f}-{(i + 1) / 10:.1f}: {n}'
            "</title></rect>"
        )
        if n:
            parts.append(f'<text x="{x + bw / 2:.1f}" y="{h - bh - 3:.1f}" class="n">{n}</text>')
    parts.append(f'<line x1="{pad}" y1="{h}" x2="{w - pad}" y2="{h}" stroke="#999"/>')
    parts.append(f'<text x="{pad}" y="{h + 14}" class="n">0</text>')
    parts.append(f'<text x="{w - pad}" y="{h + 14}" class="n">1</text>')
    parts.append("</svg>")
    return "".join(parts)


def _clock(iso: str) -> str:
    """``2026-11-29T13:20:33.996+00:00`` -> ``13:20:33.996`` (the date is in the page header)."""
    return iso.split("T", 1)[-1].split("+", 1)[0]


def _over_time(r: Report) -> str:
    w, h, left, right, top, bottom = 780, 260, 44, 190, 14, 34
    points = r.over_time
    if not points:
        return "<p>No judged traces yet.</p>"
    pw, ph = w - left - right, h - top - bottom
    n = len(points)

    def x(i: int) -> float:
        return left + (pw * i / (n - 1) if n > 1 else pw / 2)

    def y(v: float) -> float:
        return top + ph * (1.0 - v)

    parts = [
        f'<svg class="over-time" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        'aria-label="mean scores over time">'
    ]
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" class="n" text-anchor="end">{v:.2f}</text>')
    for k, name in reversed(list(enumerate(SCORE_NAMES[:4]))):  # faithfulness drawn last, on top
        pts = [
            (x(i), y(p["means"][name]), p) for i, p in enumerate(points) if p["means"].get(name) is not None
        ]
        color = _COLORS[name]
        if len(pts) > 1:
            coords = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in pts)
            parts.append(
                f'<polyline data-score="{name}" points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>'
            )
        for px, py, p in pts:
            parts.append(
                f'<circle data-score="{name}" data-start="{p["start"]}" data-mean="{p["means"][name]}" '
                f'cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"><title>{p["start"]} {name} '
                f"{fmt_score(p['means'][name])} (n={p['judged']})</title></circle>"
            )
        ly = top + 14 + 18 * k
        parts.append(f'<rect x="{left + pw + 14}" y="{ly - 9}" width="12" height="4" fill="{color}"/>')
        parts.append(f'<text x="{left + pw + 30}" y="{ly - 4}" class="n">{name.replace("_", " ")}</text>')
    parts.append(f'<text x="{left}" y="{h - 8}" class="n">{escape(_clock(points[0]["start"]))}</text>')
    parts.append(
        f'<text x="{left + pw}" y="{h - 8}" class="n" text-anchor="end">{escape(_clock(points[-1]["start"]))}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _failure_modes(r: Report) -> str:
    rows = list(r.failure_modes.items())
    if not rows:
        return "<p>No judged traces yet.</p>"
    w, bar_h, left = 620, 26, 110
    h = bar_h * len(rows) + 10
    top = max(n for _, n in rows) or 1
    parts = [
        f'<svg class="failure-modes" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="failure modes">'
    ]
    for i, (mode, n) in enumerate(rows):
        bw = (w - left - 120) * n / top
        yy = 5 + i * bar_h
        share = 100.0 * n / r.judged if r.judged else 0.0
        parts.append(f'<text x="{left - 8}" y="{yy + 17}" text-anchor="end">{escape(mode)}</text>')
        parts.append(
            f'<rect data-mode="{escape(mode)}" data-count="{n}" x="{left}" y="{yy + 3}" width="{bw:.1f}" '
            f'height="{bar_h - 8}" fill="{_MODE_COLORS.get(mode, "#555")}"/>'
        )
        parts.append(f'<text x="{left + bw + 6:.1f}" y="{yy + 17}" class="n">{n} ({share:.1f}%)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{margin-bottom:4px} h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f6f6} .muted{color:#777} .breached{color:#b00;font-weight:bold} .ok{color:#080}
svg text{font-size:12px;fill:#333} svg text.t{font-weight:bold} svg text.n{font-size:10px;fill:#555}
.hists{display:flex;flex-wrap:wrap;gap:8px} .case{border:1px solid #eee;padding:8px;margin:8px 0}
.turn{margin:4px 0 4px 12px} .flagged{border-left:3px solid #d62728;padding-left:6px}
code{background:#f4f4f4;padding:1px 4px}
"""


def render_html(r: Report, extra_sections: Sequence[tuple[str, str]] = ()) -> str:
    """The report as a complete, self-contained HTML document.

    ``extra_sections`` are (title, preformatted text) pairs appended at the end
    (the demo adds its judge-vs-truth confusion table).
    """
    data = json.dumps(r.to_json(), sort_keys=True).replace("</", "<\\/")
    volumes = _table(
        ["measure", "value"],
        [
            ["traces stored", str(r.traces)],
            ["complete traces", str(r.traces_complete)],
            ["sampled for judging", str(r.traces_sampled)],
            ["judged", str(r.judged)],
            ["judge errors", str(r.judge_errors)],
            ["claims judged", str(r.claims)],
        ]
        + [[f"sampled: {escape(k)}", str(v)] for k, v in r.sampled_by_reason.items()]
        + [[f"claims: {escape(k)}", str(v)] for k, v in r.claims_by_verdict.items()],
    )
    scores = _table(
        ["score", "n", "mean", "p10", "median", "min"],
        [
            [
                name,
                str(s.count),
                fmt_score(s.mean),
                fmt_score(s.p10),
                fmt_score(s.median),
                fmt_score(s.minimum),
            ]
            for name, s in r.scores.items()
        ],
    )
    thresholds = _table(
        ["objective", "limit", "value", "state"],
        [
            [
                escape(t.description),
                f"{t.op} {t.limit}",
                fmt_score(t.value),
                '<span class="breached">breached</span>'
                if t.breached
                else ('<span class="ok">ok</span>' if t.value is not None else "n/a"),
            ]
            for t in r.thresholds
        ],
    )
    hists = "".join(_histogram(name, r.scores[name].histogram) for name in SCORE_NAMES)
    breached = r.breached
    summary = (
        f'<p class="breached">{len(breached)} quality threshold(s) breached: '
        f"{escape(', '.join(t.name for t in breached))}</p>"
        if breached
        else '<p class="ok">No quality threshold breached.</p>'
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ragpulse quality report</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head>
<body>
<h1>ragpulse quality report</h1>
<p class="muted">judge <code>{escape(r.judge_id or "-")}</code> · database <code>{escape(r.database)}</code> ·
traces {escape(r.first_time or "-")} to {escape(r.last_time or "-")} · generated {escape(r.generated_at)}</p>
{summary}
<h2>Volumes</h2>{volumes}
<h2>Scores</h2>{scores}
<h2>Score distributions</h2><div class="hists">{hists}</div>
<h2>Scores over time</h2><p class="muted">mean per {r.over_time_bucket_s:g} s of trace time</p>{_over_time(r)}
<h2>Failure modes</h2>{_failure_modes(r)}
<p class="muted">abstentions: {escape(", ".join(f"{k} {n}" for k, n in r.abstentions.items()) or "none")}</p>
{_sessions(r.sessions)}
<h2>Quality thresholds</h2>{thresholds}
<h2>Worst cases</h2>{_worst_cases(r)}
{"".join(f"<h2>{escape(title)}</h2><pre>{escape(text)}</pre>" for title, text in extra_sections)}
<script type="application/json" id="ragpulse-report-data">{data}</script>
</body></html>
"""


def _worst_cases(r: Report) -> str:
    """One block per worst case: the verdict, the question and answer, what was wrong."""
    cases = []
    for c in r.worst:
        items = "".join(
            f"<li>{escape(cl['verdict'])}{(' (' + escape(cl['source']) + ')') if cl.get('source') else ''}: "
            f"{escape(cl['text'])}</li>"
            for cl in c.unsupported_claims
        ) + "".join(
            f"<li>invalid citation {escape(', '.join(ci['cited']) or '-')} (support in "
            f"{escape(', '.join(ci['supported_by']) or 'no chunk')}): {escape(ci['text'])}</li>"
            for ci in c.invalid_citations
        )
        cases.append(
            f'<div class="case" data-trace-id="{escape(c.trace_id)}"><b>{escape(c.failure_mode)}</b> '
            f"· faithfulness {fmt_score(c.faithfulness)} · citation correctness {fmt_score(c.citation_correctness)} "
            f'<span class="muted">trace <code>{escape(c.trace_id)}</code> {escape(c.time)}</span>'
            f"<p><b>Q:</b> {escape(c.query)}<br><b>A:</b> {escape(c.answer)}</p><ul>{items}</ul></div>"
        )
    return "".join(cases) or "<p>None.</p>"


def _sessions(s: SessionsSummary | None) -> str:
    """The Sessions section: the figures (each with its ``data-session-figure``) and the conversations."""
    if s is None or not s.sessions:
        return ""
    share = "-" if s.flagged_share is None else f"{100.0 * s.flagged_share:.1f}%"
    figures = [
        ("sessions", s.sessions), ("multi-turn sessions", s.multi_turn), ("ended sessions", s.ended),
        ("turns", s.turns), ("judged turns", s.judged_turns), ("flagged turns", s.flagged_turns),
        ("sessions with a flagged turn", s.sessions_flagged),
        *((f"flagged, then {k}", n) for k, n in s.followed_by.items()),
        *((f"sessions of {t} turn(s)", n) for t, n in s.turns_per_session.items()),
    ]  # fmt: skip
    rows = [[escape(name), f'<span data-session-figure="{escape(name)}">{n}</span>'] for name, n in figures]
    blocks = []
    for c in s.conversations:
        turns = "".join(
            f'<div class="turn{" flagged" if t.flagged else ""}" data-trace-id="{escape(t.trace_id)}">'
            f"<b>user:</b> {escape(t.query)}<br><b>assistant:</b> {escape(t.answer)} "
            f'<span class="muted">{escape(t.failure_mode or "not judged")}'
            f"{' · flagged' if t.flagged else ''}{' · re-asked' if t.reasked else ''}</span></div>"
            for t in c.turns
        )
        blocks.append(
            f'<div class="case" data-session-id="{escape(c.session_id)}"><b>{escape(c.session_id)}</b> '
            f'<span class="muted">{escape(c.service)} · {len(c.turns)} turns · a flagged turn '
            f"{escape(c.outcome)}</span>{turns}</div>"
        )
    return (
        f'<h2>Sessions</h2><p class="muted">conversations by session id; {share} of judged turns flagged '
        "(failure mode retrieval, generation or both, or a false refusal)</p>"
        + _table(["measure", "value"], rows)
        + "".join(blocks)
    )
