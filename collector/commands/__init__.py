"""Subcommands of the ``ragpulse`` CLI contributed by the collector (see collector/cli.py)."""
