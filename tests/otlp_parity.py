"""The comparison that holds the native OTLP decoder to the Python reference, on one input.

Both decoders run on the same bytes and limits; their outcomes must be equal: either both
raise :class:`MalformedRecord` with the same reason, or both return the same spans (every
field; attribute values compared by type and bit pattern, dict order included) and the same
per-span errors. Used by tests/test_otlp_native.py and by the coverage-guided fuzzer
(tests/fuzz_otlp.py, bench/fuzz_decoder.py).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from ragpulse.collector.ingest.otlp import Limits, MalformedRecord

__all__ = ["canon", "span_tuple", "outcome"]


def canon(v: Any) -> Any:
    """A value with its exact type and, for floats, its bit pattern (so NaN == NaN, -0.0 != 0.0)."""
    if isinstance(v, float):
        return ("float", struct.pack("<d", v))
    if isinstance(v, dict):
        return ("dict", [(canon(k), canon(x)) for k, x in v.items()])
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [canon(x) for x in v])
    return (type(v).__name__, v)


def span_tuple(s: Any) -> Any:
    """Every field of a decoded span, canonical."""
    return canon([getattr(s, k) for k in s.__slots__])


def outcome(fn: Callable[[bytes, Limits], Any], data: bytes, limits: Limits) -> Any:
    """``("malformed", reason)`` or ``("ok", spans, errors)``: what ``fn`` decides on ``data``.
    Anything else it raises (a native panic) propagates."""
    try:
        r = fn(data, limits)
    except MalformedRecord as exc:
        return ("malformed", str(exc))
    return ("ok", [span_tuple(s) for s in r.spans], list(r.errors))
