"""The tiered judge: the local judge on every trace, optionally its MiniLM second tier on
the claims in a probability band, and the LLM judge on a deterministic sub-sample and on
borderline local verdicts.

The second tier (``minilm``: settings of :class:`.second_tier.MiniLMTier`, its ``band``
[0.35, 0.65) by default) re-scores, inside the local judge, the claims whose tier-1
probability lies in its band; the LLM tier then sees the re-scored probabilities. Building
it without its weights package raises :class:`.minilm.TierUnavailable`. With ``model``
None there is no LLM tier: local and second tier only.

A local verdict is borderline when some claim's calibrated support probability
(``support_probability``) lies in the configurable ``borderline`` band around the
verdict threshold (by default 0.35-0.65: the claims the local judge gets right
least often), when the local judge saw an
abstention (refusals are the costliest mistake to get wrong), or when it
errored. The record of the tier that judged last is returned; ``judge_tier``
says which (``local`` or ``llm``) and ``escalation`` why. If the LLM judge
fails, the local record is kept and the LLM error is attached
(``llm_error``), so a trace is never left unjudged.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..llm.judge import LLMJudge
from ..local.judge import LocalJudge

__all__ = ["TieredJudge"]


class TieredJudge:
    """Local judge first, LLM judge on ``sample_rate`` of traces and borderline verdicts.

    Settings: ``sample_rate`` (0.05), ``borderline`` ((0.35, 0.65)), ``escalate_abstentions`` (True),
    ``local`` (dict of LocalJudge settings), ``entailment`` (the local judge's entailment tier:
    a dict of its settings, False for none; on by default), ``minilm`` (dict of MiniLM-tier
    settings in its place, None: not that tier); everything else goes to :class:`.llm.judge.LLMJudge` (none when ``model`` is None).
    """

    kind = "tiered"

    def __init__(
        self,
        model: str | None,
        *,
        sample_rate: float = 0.05,
        borderline: tuple[float, float] = (0.35, 0.65),
        escalate_abstentions: bool = True,
        local: dict[str, Any] | None = None,
        minilm: dict[str, Any] | None = None,
        entailment: dict[str, Any] | bool | None = None,
        **llm_settings: Any,
    ) -> None:
        local_settings = dict(local or {})
        if entailment is not None:
            local_settings["entailment"] = entailment
        if minilm is not None:
            local_settings["minilm"] = minilm
        self.local = LocalJudge(**local_settings)
        if model is None and llm_settings:
            raise ValueError(f"LLM settings {sorted(llm_settings)} given without an LLM model")
        self.llm = LLMJudge(model, **llm_settings) if model is not None else None
        self.sample_rate = float(sample_rate)
        self.borderline = (float(borderline[0]), float(borderline[1]))
        self.escalate_abstentions = bool(escalate_abstentions)
        pinned = {
            "sample_rate": self.sample_rate,
            "borderline": self.borderline,
            "escalate_abstentions": self.escalate_abstentions,
        }
        digest = hashlib.sha256(json.dumps(pinned, sort_keys=True).encode()).hexdigest()[:6]
        tiers = [self.local.judge_id] + ([self.llm.judge_id] if self.llm is not None else [])
        self.judge_id = f"tiered-{digest}[{'|'.join(tiers)}]"
        self.stats = {"local_only": 0, "escalated_sample": 0, "escalated_borderline": 0, "llm_failed": 0}

    def escalation(self, trace_id: str, local_out: dict[str, Any]) -> str | None:
        """Why this trace goes to the LLM tier (``sample``/``borderline``/``abstention``/``local_error``), or None."""
        if self.llm is None:
            return None
        if local_out.get("error"):
            return "local_error"
        h = int(hashlib.sha256(trace_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        if h < self.sample_rate:
            return "sample"
        if self.escalate_abstentions and local_out.get("abstained"):
            return "abstention"
        lo, hi = self.borderline
        for c in local_out.get("claims", []):
            p = c.get("support_probability", c.get("confidence"))
            if p is not None and lo <= p <= hi:
                return "borderline"
        return None

    def _finish(
        self, local_out: dict[str, Any], why: str | None, llm_out: dict[str, Any] | None
    ) -> dict[str, Any]:
        if why is None or llm_out is None:
            self.stats["local_only"] += 1
            out = dict(local_out)
        elif llm_out.get("error"):
            self.stats["llm_failed"] += 1
            out = dict(local_out)
            out["llm_error"] = llm_out["error"]
        else:
            self.stats["escalated_sample" if why == "sample" else "escalated_borderline"] += 1
            out = dict(llm_out)
            out["local_failure_mode"] = local_out.get("failure_mode")
            out["local_faithfulness"] = local_out.get("faithfulness")
        out["judge_id"] = self.judge_id
        out["escalation"] = why
        return out

    def judge(self, record: dict[str, Any]) -> dict[str, Any]:
        """Judge one record with the local tier and, when warranted, the LLM tier."""
        local_out = self.local.judge(record)
        why = self.escalation(str(local_out.get("trace_id", "")), local_out)
        llm_out = self.llm.judge(record) if why and self.llm is not None else None
        return self._finish(local_out, why, llm_out)

    def judge_many(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Judge a batch: local on all, the escalated ones concurrently on the LLM tier."""
        local_outs = [self.local.judge(r) for r in records]
        whys = [self.escalation(str(o.get("trace_id", "")), o) for o in local_outs]
        esc = [i for i, w in enumerate(whys) if w]
        llm_outs = (
            dict(zip(esc, self.llm.judge_many([records[i] for i in esc]), strict=True))
            if esc and self.llm is not None
            else {}
        )
        return [
            self._finish(o, w, llm_outs.get(i)) for i, (o, w) in enumerate(zip(local_outs, whys, strict=True))
        ]

    def close(self) -> None:
        if self.llm is not None:
            self.llm.close()
