"""ragpulse judges: claim-level faithfulness, citation and abstention verdicts.

``get_judge("local")`` is the deterministic local judge; any other spec is a
litellm model name for the LLM judge; ``"tiered:<model>"`` runs the local
judge on everything and the LLM judge on a sub-sample and on borderline local
verdicts; ``"tiered"`` alone is the local judge with its tiers only (e.g. with
``minilm={"band": (0.35, 0.65)}``, the MiniLM second tier on the claims in that band). Every judge has ``judge_id`` and ``judge(record) -> dict`` that
returns the DESIGN.md output record and never raises for a bad judgment.
"""

from __future__ import annotations

from typing import Any

from ..contract import Judge

__all__ = ["Judge", "get_judge"]


def get_judge(spec: str = "local", **settings: Any) -> Judge:
    """Build a judge: ``"local"``, ``"tiered"``, ``"tiered:<litellm model>"`` or a litellm model name."""
    if spec == "local":
        from .local.judge import LocalJudge

        return LocalJudge(**settings)
    if spec == "tiered" or spec.startswith("tiered:"):
        from .tiers.tiered import TieredJudge

        return TieredJudge(spec.split(":", 1)[1] if ":" in spec else None, **settings)
    from .llm.judge import LLMJudge

    return LLMJudge(spec, **settings)
