"""Bounded ``variant`` label values for the quality metrics.

A variant is whatever string the application puts in ``rag.variant``, so the
set of values is the application's to grow: one bug that writes a request id
there would create a Prometheus series per request. :class:`VariantLabels`
maps each variant to a label value from a bounded set: with an allow-list
(``variants.labels.allow``), those names and ``other``; without one, the first
``max_values - 1`` distinct variants this process sees, then ``other`` for
every later one. A trace without a variant gets the empty value, which
Prometheus treats as no label (the series stay those of an unvaried service).
Either way at most ``max_values`` values exist. The first-seen set is per
process: give the collectors and judge workers an allow-list when their
dashboards must agree on which variants have a series of their own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["VariantLabels", "OTHER"]

#: The label value of every variant beyond the bound.
OTHER = "other"


class VariantLabels:
    """variant string -> label value, never more than ``max_values`` distinct values."""

    def __init__(self, allow: Iterable[str] = (), max_values: int = 10) -> None:
        self.allow = frozenset(str(a) for a in allow if a)
        if max_values < 2:
            raise ValueError("variants.labels.max_values must be at least 2 (one variant and 'other')")
        if OTHER in self.allow:
            raise ValueError(f"variants.labels.allow may not name {OTHER!r}: it is the overflow label")
        if len(self.allow) > max_values - 1:
            raise ValueError(
                f"variants.labels.allow names {len(self.allow)} variants; max_values {max_values} "
                f"leaves room for {max_values - 1} and 'other'"
            )
        self.max_values = max_values
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self.overflowed = 0  # variants mapped to OTHER (a count of calls, for tests and docs)

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> VariantLabels:
        labels = dict((section or {}).get("labels") or {})
        return cls(labels.get("allow") or (), int(labels.get("max_values", 10)))

    def label(self, variant: str) -> str:
        """The label value of ``variant`` ('' for none, itself while within the bound, else 'other')."""
        if not variant:
            return ""
        if self.allow:
            if variant in self.allow:
                return variant
        elif variant in self._seen:
            return variant
        else:
            with self._lock:
                if variant in self._seen:
                    return variant
                if len(self._seen) < self.max_values - 1 and variant != OTHER:
                    self._seen.add(variant)
                    return variant
        self.overflowed += 1
        return OTHER

    def values(self) -> frozenset[str]:
        """The named label values handed out so far (or allowed), without 'other'."""
        return self.allow or frozenset(self._seen)
