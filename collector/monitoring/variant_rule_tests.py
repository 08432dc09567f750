"""The promtool cases of ``RagpulseVariantRegression`` (``rules/tests/variant_test.yaml``).

Two arms of one service and judge, with claim counters shaped like the
collector's: the worse arm fires, arms that agree (beside calls without a
variant) do not, a worse arm with too few claims does not, and a fixed arm
resolves once its bad hour has left the window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .config import duration_seconds
from .promtool_cases import JUDGE, SCRAPE, SERVICE, Case, Expect, counter, series
from .variant_rules import CLAIMS, check_variant_config

__all__ = ["variant_cases"]


def _claims(variant: str, *phases: tuple[float, float, int]) -> list[tuple[str, str]]:
    """A variant's claim counters for phases of (unsupported share, claims per minute, minutes)."""
    labels = {"service": SERVICE, "judge": JUDGE, **SCRAPE}
    if variant:
        labels["variant"] = variant
    out = []
    for verdict, share in (("unsupported", lambda r: r), ("supported", lambda r: 1 - r)):
        segs = [(round(share(r) * n, 6), k) for r, n, k in phases]
        out.append((series(CLAIMS, {**labels, "verdict": verdict}), counter(*segs)))
    return out


def variant_cases(config: Mapping[str, Any]) -> list[Case]:
    """Fires on the worse arm only, quiet when the arms agree, volume guard, resolves after a fix."""
    vr = check_variant_config(config)
    a, rule = vr["alert"], {"severity": vr["severity"]}
    d = float(vr["min_diff"])
    good, bad = round(d / 2, 3), round(d * 4, 3)
    per_min = max(20, 4 * int(vr["min_claims"]) // max(1, int(duration_seconds(vr["window"]) // 60)) + 1)
    few = max(0.1, int(vr["min_claims"]) / (4 * duration_seconds(vr["window"]) / 60))
    win = int(duration_seconds(vr["window"]) // 60)
    fire_at, steps = f"{win // 2 + int(duration_seconds(vr['for']) // 60)}m", 3 * win
    fired = Expect(rule, {"service": SERVICE, "judge": JUDGE, "variant": "treatment"}, round(bad - good, 6))
    return [
        Case(f"{a} fires on the worse variant only", "1m",
             _claims("control", (good, per_min, steps)) + _claims("treatment", (bad, per_min / 4, steps)),
             [(fire_at, a, [fired])]),
        Case(f"{a} healthy: the variants agree", "1m",
             _claims("control", (good, per_min, steps)) + _claims("treatment", (good, per_min, steps))
             + _claims("", (bad / 2, per_min, steps)),
             [(fire_at, a, [])]),
        Case(f"{a} volume guard: few judged claims in the variant", "1m",
             _claims("control", (good, per_min, steps)) + _claims("treatment", (bad, few, steps)),
             [(fire_at, a, [])]),
        Case(f"{a} resolves after the variant is fixed", "1m",
             _claims("control", (good, per_min, 3 * win)) + _claims("treatment", (bad, per_min, win), (good, per_min, 2 * win)),
             [(fire_at, a, [Expect(rule, fired.labels, round(bad - good, 6))]), (f"{3 * win}m", a, [])]),
    ]  # fmt: skip
