"""Trace and span ids drawn from a seeded generator, so a demo run with a given ``--seed`` repeats.

The demo samples half of its traces by trace-id hash (as the collector does in
production); with the OpenTelemetry SDK's random ids, which traces are judged,
and so which failing cases reach the exported eval set, would change from run
to run. The agent's ``id_generator`` setting takes this generator instead.
"""

from __future__ import annotations

import random

from opentelemetry.sdk.trace.id_generator import IdGenerator

__all__ = ["SeededIds"]


class SeededIds(IdGenerator):
    """128-bit trace ids and 64-bit span ids from ``random.Random(seed)`` (never the invalid 0)."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._draw(64)

    def generate_trace_id(self) -> int:
        return self._draw(128)

    def is_trace_id_random(self) -> bool:
        return True  # uniformly drawn: hash and ratio samplers stay fair

    def _draw(self, bits: int) -> int:
        value = 0
        while value == 0:
            value = self._rng.getrandbits(bits)
        return value
