"""A subcommand made of actions (``ragpulse schema apply``, ``ragpulse feedback import``).

The command without an action prints its help and exits with status 2; each
action is a parser of its own with its handler as ``func``.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["action_parser"]


def action_parser(subparsers: Any, command: str, help: str, description: str | None) -> Any:
    """The command's parser; returns ``add(action, help, func, config)``, which makes an action's."""
    parser = subparsers.add_parser(command, help=help, description=description)
    sub = parser.add_subparsers(dest=f"{command}_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    def add(action: str, action_help: str, func: Any, config: str) -> argparse.ArgumentParser:
        """The action's parser, with ``--config`` (a collector YAML config; ``config`` says what of it)."""
        p = sub.add_parser(action, help=action_help)
        p.add_argument("--config", help=f"collector YAML config ({config})")
        p.set_defaults(func=func)
        return p

    return add
