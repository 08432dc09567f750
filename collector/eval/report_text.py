"""The terminal report of an eval: headline table, comparison, slices, failing cases, position curve."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .metrics import METRICS

__all__ = ["render_text", "comparison_table", "SLICE_COLUMNS", "failing_cases"]

#: The metrics shown per slice (the full set is in the JSON output).
SLICE_COLUMNS: tuple[str, ...] = ("strict_pass", "claim_recall", "faithfulness", "forbidden_hit")


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def comparison_table(doc: dict[str, Any], names: Sequence[str] | None = None) -> list[str]:
    """The headline table (with the paired comparison when there is one) of ``names`` (default: all
    metrics, in METRICS order), skipping metrics that applied to no case."""
    comp = (doc.get("comparison") or {}).get("overall")
    base = ((doc.get("comparison") or {}).get("baseline") or {}).get("overall", {}).get("metrics", {})
    head = ["metric", "n", "mean"] + (["baseline", "delta", "95% CI", "verdict"] if comp else [])
    rows = [head]
    for m in METRICS:
        if m.kind == "category" or (names is not None and m.name not in names):
            continue
        s = doc["overall"]["metrics"][m.name]
        if not s["n"]:
            continue
        row = [m.name, str(s["n"]), _fmt(s.get("mean"))]
        if comp:
            c = comp.get(m.name) or {}
            ci = c.get("ci")
            row += [
                _fmt((base.get(m.name) or {}).get("mean")),
                _fmt(c.get("delta")),
                f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "-",
                c.get("verdict") or "-",
            ]
        rows.append(row)
    return _table(rows)


def _slices(doc: dict[str, Any]) -> list[str]:
    rows = [["slice", "n", *SLICE_COLUMNS]]
    for field, values in doc["slices"].items():
        for value, agg in values.items():
            rows.append(
                [f"{field}={value}", str(agg["n"])]
                + [_fmt(agg["metrics"][c].get("mean")) for c in SLICE_COLUMNS]
            )
    return _table(rows) if len(rows) > 1 else []


def failing_cases(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Cases that did not pass strictly (or could not be judged), in eval-set order."""
    return [r for r in doc["cases"] if r["metrics"].get("strict_pass") is False or r["details"].get("error")]


def _failures(doc: dict[str, Any], limit: int) -> list[str]:
    out: list[str] = []
    failing = failing_cases(doc)
    for r in failing[:limit]:
        d = r["details"]
        out.append(f"  {r['case_id']} ({r['split']})")
        if d.get("error"):
            out.append(f"    error: {d['error']}")
        out.extend(f"    missing gold claim: {t}" for t in d.get("missing_gold_claims", []))
        out.extend(
            f"    forbidden hit: {h['claim']!r} states {h['forbidden']!r}"
            for h in d.get("forbidden_hits", [])
        )
        out.extend(
            f"    invalid citation: {c['claim']!r} cites {', '.join(c['cited'])}"
            for c in d.get("invalid_citations", [])
        )
        out.extend(f"    unsupported by the context: {t}" for t in d.get("unsupported_claims", []))
        if r["metrics"].get("abstention") == "false_refusal":
            out.append("    refused although the case is answerable")
    if len(failing) > limit:
        out.append(f"  ... and {len(failing) - limit} more (see the JSON or HTML report)")
    return out


def _sweep(doc: dict[str, Any]) -> list[str]:
    sweep = doc.get("position_sweep")
    if not sweep:
        return []
    rows = [["position", "n", *sweep["metrics"].keys()]]
    for i, pos in enumerate(sweep["positions"]):
        rows.append([str(pos), str(sweep["n"][i])] + [_fmt(vals[i]) for vals in sweep["metrics"].values()])
    return ["", "Quality by position of the gold evidence in the context:", *_table(rows)]


def render_text(doc: dict[str, Any], *, max_failures: int = 10) -> str:
    """The whole terminal report as one string."""
    dev, hold = doc["overall"]["n"], doc["holdout"]["n"]
    lines = [f"ragpulse eval — judge {doc['judge_id']} — {dev} dev case(s), {hold} holdout case(s)", ""]
    lines += comparison_table(doc)
    if hold:
        s = doc["holdout"]["metrics"]
        lines += [
            "",
            "Holdout (not in the headline): "
            + ", ".join(f"{c} {_fmt(s[c].get('mean'))} (n={s[c]['n']})" for c in SLICE_COLUMNS),
        ]
    sl = _slices(doc)
    if sl:
        lines += ["", "Slices (dev; split shows both):", *sl]
    fails = _failures(doc, max_failures)
    if fails:
        lines += ["", f"Failing cases ({len(failing_cases(doc))}):", *fails]
    lines += _sweep(doc)
    if doc.get("missing_cases"):
        lines += [
            "",
            f"{len(doc['missing_cases'])} case(s) have no run record: "
            + ", ".join(doc["missing_cases"][:10]),
        ]
    return "\n".join(lines)
