"""The judge options ``ragpulse judge`` and ``ragpulse eval`` share, and the judge they build.

``--judge`` picks the judge (``local``, ``tiered``, ``tiered:<model>`` or a litellm model
name); ``--api-base`` points an LLM judge at an OpenAI-compatible server; ``--claim-weights``
loads a claim-head weights file, or the decision ``ragpulse judge refit`` writes (the claim
head and, in its ``response`` object, the response rule). Each of the local judge's second
tiers (:data:`SECOND_TIERS`; one at most, for any judge that runs the local judge) has a flag
that turns it on and ``--<tier>-band LO HI``, the tier-1 probability band it re-scores:
``--entailment`` (:mod:`..judge.tiers.entailment`, its model ships with the package) and
``--minilm``, the optional MiniLM similarity tier (:mod:`..judge.tiers.second_tier`). Bad
combinations and a tier whose weights are not installed are one-line
:class:`.errors.CliError`\\ s.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..judge.tiers.band import DEFAULT_BAND
from .errors import CliError

__all__ = ["SECOND_TIERS", "add_judge_options", "build_judge", "judge_settings"]

JUDGE_HELP = (
    "'local' (default), a litellm model name (e.g. openai/gpt-4o-mini), 'tiered:<model>' (local, "
    "then the LLM on a sample and on borderline verdicts) or 'tiered' (the local tiers only)"
)

_LOCAL_SPECS = ("local", "tiered")

#: The local judge's second tiers (one at most), by option name: what it is, how it is installed.
SECOND_TIERS: dict[str, tuple[str, str]] = {
    "minilm": ("the MiniLM second tier", "make minilm installs it"),
    "entailment": ("the entailment tier", "its model ships with ragpulse"),
}


def add_judge_options(p: argparse.ArgumentParser) -> None:
    """``--judge``, ``--api-base``, ``--claim-weights`` and the second-tier options on ``p``."""
    p.add_argument("--judge", default="local", help=JUDGE_HELP)
    p.add_argument("--api-base", default=None, help="LLM judge: API base URL (OpenAI-compatible)")
    p.add_argument(
        "--claim-weights",
        default=None,
        help="local judge: a claim-head weights file, or the decision `ragpulse judge refit` writes (a new judge id)",
    )
    lo, hi = DEFAULT_BAND
    for name, (tier, installed) in SECOND_TIERS.items():
        p.add_argument(
            f"--{name}",
            action="store_true",
            help=f"local judge: re-score unsure claims with {tier} ({installed})",
        )
        p.add_argument(
            f"--{name}-band",
            nargs=2,
            type=float,
            metavar=("LO", "HI"),
            default=None,
            help=f"the tier-1 probability band {tier} re-scores (implies --{name}; default {lo:g} {hi:g})",
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
    tiers = [n for n in SECOND_TIERS if getattr(args, n) or getattr(args, f"{n}_band") is not None]
    has_local = args.judge == "local" or args.judge.startswith("tiered")
    for name in tiers:
        if not has_local:
            raise CliError(f"--{name} is a tier of the local judge; --judge {args.judge} has none")
    if len(tiers) > 1:
        raise CliError(f"one second tier at most: {' or '.join(f'--{n}' for n in tiers)}, not both")
    for name in tiers:
        band = getattr(args, f"{name}_band")
        settings[name] = {} if band is None else {"band": tuple(band)}
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
