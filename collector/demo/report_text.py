"""The terminal rendering of a :class:`~ragpulse.collector.report.Report`.

Plain text that reads well in an 100-column terminal and in a CI log. It
formats numbers only; every figure comes from the report (the database).
"""

from __future__ import annotations

import textwrap

from ..contract import SCORE_NAMES
from .report import Report
from .report_sessions import SessionsSummary

__all__ = ["render_text", "fmt_score"]

_BAR = 28


def fmt_score(v: float | None) -> str:
    """A score as printed (3 decimals, or ``-`` when it does not apply)."""
    return "-" if v is None else f"{v:.3f}"


def _pct(n: int, total: int) -> str:
    return f"{100.0 * n / total:5.1f}%" if total else "    -"


def _bar(n: int, total: int) -> str:
    return "#" * (round(_BAR * n / total) if total else 0)


def _wrap(text: str, indent: str, width: int = 100) -> str:
    return textwrap.fill(" ".join(text.split()), width=width, initial_indent=indent, subsequent_indent=indent)


def render_text(r: Report, *, color: bool = False) -> str:
    """The report as text lines for a terminal."""
    red = (lambda s: f"\033[31m{s}\033[0m") if color else (lambda s: s)
    green = (lambda s: f"\033[32m{s}\033[0m") if color else (lambda s: s)
    out: list[str] = []
    add = out.append

    add("ragpulse quality report")
    add("=" * 23)
    add(f"judge: {r.judge_id or '(no judgments yet)'}")
    if r.first_time:
        add(f"traces from {r.first_time} to {r.last_time}")
    add("")
    add("Volumes")
    add(f"  traces stored     {r.traces:>7}   (complete {r.traces_complete})")
    add(f"  sampled for judge {r.traces_sampled:>7}   {_pct(r.traces_sampled, r.traces)}")
    for reason, n in r.sampled_by_reason.items():
        add(f"    {reason:<24}{n:>7}")
    add(f"  judged            {r.judged:>7}")
    add(f"  judge errors      {r.judge_errors:>7}")
    add(
        f"  claims judged     {r.claims:>7}   "
        + ", ".join(f"{v} {n}" for v, n in r.claims_by_verdict.items())
    )
    if len(r.services) > 1:
        add("  services: " + ", ".join(f"{s} {n}" for s, n in r.services.items()))
    add("")
    add("Scores (judged traces where the score applies)")
    add(f"  {'score':<24}{'n':>6}{'mean':>8}{'p10':>8}{'median':>8}{'min':>8}")
    for name in SCORE_NAMES:
        s = r.scores[name]
        add(
            f"  {name:<24}{s.count:>6}{fmt_score(s.mean):>8}{fmt_score(s.p10):>8}"
            f"{fmt_score(s.median):>8}{fmt_score(s.minimum):>8}"
        )
    add("")
    add("Failure modes")
    for mode, n in r.failure_modes.items():
        add(f"  {mode:<14}{n:>6} {_pct(n, r.judged)}  {_bar(n, r.judged)}")
    if r.abstentions:
        add("  abstentions: " + ", ".join(f"{k} {n}" for k, n in r.abstentions.items()))
    add("")
    add(f"Worst cases ({len(r.worst)})")
    for i, c in enumerate(r.worst, 1):
        add(
            f"  {i}. trace {c.trace_id}  {c.failure_mode}  faithfulness {fmt_score(c.faithfulness)}"
            f"  citation correctness {fmt_score(c.citation_correctness)}"
        )
        add(_wrap(f"Q: {c.query}", "     "))
        add(_wrap(f"A: {c.answer}", "     "))
        for claim in c.unsupported_claims:
            src = f", {claim['source']}" if claim.get("source") else ""
            add(_wrap(f"- {claim['verdict']}{src}: {claim['text']}", "     "))
        for cit in c.invalid_citations:
            add(
                _wrap(
                    f"- invalid citation {', '.join(cit['cited']) or '-'} (support in "
                    f"{', '.join(cit['supported_by']) or 'no chunk'}): {cit['text']}",
                    "     ",
                )
            )
    if r.sessions is not None and r.sessions.sessions:
        add("")
        out.extend(_sessions(r.sessions))
    add("")
    add("Quality thresholds")
    for t in r.thresholds:
        state = red("BREACHED") if t.breached else green("ok") if t.value is not None else "n/a"
        add(f"  {t.description:<48} {t.op} {t.limit:<5} value {fmt_score(t.value):>6}  {state}")
    breached = r.breached
    add("")
    add(
        f"{len(breached)} threshold(s) breached: " + ", ".join(t.name for t in breached)
        if breached
        else "No quality threshold breached."
    )
    return "\n".join(out)


def _sessions(s: SessionsSummary) -> list[str]:
    """The Sessions section: counts, turns per session, what followed flagged turns, conversations."""
    share = "-" if s.flagged_share is None else f"{100.0 * s.flagged_share:.1f}%"
    out = [
        "Sessions (conversations by session id; flagged: failure mode retrieval/generation/both or a false refusal)",
        f"  sessions          {s.sessions:>7}   multi-turn {s.multi_turn}, ended {s.ended}",
        f"  turns             {s.turns:>7}   judged {s.judged_turns}",
        "  turns per session   " + "  ".join(f"{t}: {n}" for t, n in s.turns_per_session.items()),
        f"  flagged turns     {s.flagged_turns:>7}   {share} of judged turns, in {s.sessions_flagged} session(s)",
    ]
    for then, n in s.followed_by.items():
        if n or then != "pending":
            out.append(f"    then {then:<13}{n:>7}")
    for c in s.conversations:
        out.append(f"  Conversation {c.session_id} ({len(c.turns)} turns; a flagged turn {c.outcome})")
        for i, t in enumerate(c.turns, 1):
            verdict = t.failure_mode or "not judged"
            mark = (" FLAGGED" + (", re-asked" if t.reasked else "")) if t.flagged else ""
            out.append(_wrap(f"{i}. user: {t.query}", "     "))
            out.append(_wrap(f"assistant: {t.answer}  [{verdict}{mark}]", "        "))
    return out
