"""Generation cost per trace: the model's prices (configured, else litellm's price map) x its tokens.

``cost.prices`` in the collector config names USD prices per million input
and output tokens for a model and wins over litellm's map (a negotiated
price, a self-hosted model, a model litellm does not know). Otherwise the
price comes from ``litellm.model_cost``, looked up by the model name, then
``provider/model``, then the name after a ``provider/`` prefix. A trace
whose model has no price, or that has no model, costs NULL, not 0, and is
counted (``ragpulse_generation_unpriced_total``), so a cost per query is
never an average that silently includes unpriced traces as free.

litellm's map is the price file the installed litellm ships
(``model_prices_and_context_window_backup.json``, what ``litellm.model_cost``
holds with ``LITELLM_LOCAL_MODEL_COST_MAP=True``), read as JSON on the first
model not configured, of which only the fields a price lookup reads are kept
(the file's ~4,900 entries carry dozens of other fields: some 5 MB of Python
objects the ingest process would hold for nothing). Importing litellm itself
would cost the ingest loop about 150 MB of private memory and seconds of CPU
for one dictionary; where litellm is already imported (the LLM judge in the
same process) its ``model_cost`` is used as it is, and where the file is
missing litellm is imported. Without litellm (the ``llm`` extra) only
configured prices apply.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Pricing", "NO_MODEL", "UNKNOWN_MODEL"]

log = logging.getLogger("ragpulse.cost")

#: Why a trace has no cost (the reason label of ragpulse_generation_unpriced_total).
NO_MODEL, UNKNOWN_MODEL = "no_model", "unknown_model"

_PER_MILLION = 1_000_000.0


_LITELLM_PRICE_FILE = "model_prices_and_context_window_backup.json"
# What Pricing._lookup reads of an entry of litellm's map.
_PRICE_FIELDS = ("input_cost_per_token", "output_cost_per_token", "alias_of")


def _price_fields(prices: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The entries of a price file reduced to :data:`_PRICE_FIELDS` (entries without any dropped)."""
    out: dict[str, dict[str, Any]] = {}
    for name, entry in prices.items():
        if isinstance(entry, Mapping):
            kept = {k: entry[k] for k in _PRICE_FIELDS if k in entry}
            if kept:
                out[name] = kept
    return out


def _litellm_map() -> Mapping[str, Any]:
    """litellm's price map: its imported ``model_cost``, else the price file it ships, else an import."""
    loaded = sys.modules.get("litellm")
    if loaded is not None and isinstance(getattr(loaded, "model_cost", None), Mapping):
        return loaded.model_cost
    spec = importlib.util.find_spec("litellm")  # locates the package without importing it
    if spec is None:
        log.warning("litellm is not installed: only cost.prices from the config price generation")
        return {}
    for folder in spec.submodule_search_locations or ():
        path = Path(folder) / _LITELLM_PRICE_FILE
        if path.is_file():
            prices = orjson.loads(path.read_bytes())
            if isinstance(prices, Mapping):
                return _price_fields(prices)
    import litellm

    return litellm.model_cost


class Pricing:
    """Prices per token by model; :meth:`cost` of one call."""

    def __init__(
        self, prices: Mapping[str, Mapping[str, Any]] | None = None, use_litellm: bool = True
    ) -> None:
        self._prices: dict[str, tuple[float, float]] = {}
        for model, p in (prices or {}).items():
            try:
                inp, out = float(p["input_per_million"]), float(p["output_per_million"])
            except (KeyError, TypeError, ValueError):
                raise ValueError(
                    f"cost.prices.{model} needs numeric input_per_million and output_per_million"
                ) from None
            if inp < 0 or out < 0:
                raise ValueError(f"cost.prices.{model}: prices must be >= 0")
            self._prices[str(model)] = (inp / _PER_MILLION, out / _PER_MILLION)
        self._cache: dict[tuple[str, str], tuple[float, float] | None] = {}  # (model, provider) -> price
        self._use_litellm = use_litellm
        self._map: Mapping[str, Any] | None = None

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> Pricing:
        section = section or {}
        return cls(section.get("prices") or {}, bool(section.get("litellm", True)))

    def _lookup(self, model: str, provider: str) -> tuple[float, float] | None:
        if not self._use_litellm:
            return None
        if self._map is None:
            self._map = _litellm_map()
        names = [
            model,
            f"{provider}/{model}" if provider else "",
            model.split("/", 1)[1] if "/" in model else "",
        ]
        for name in names:
            entry = self._map.get(name) if name else None
            if isinstance(entry, Mapping) and "alias_of" in entry and "input_cost_per_token" not in entry:
                entry = self._map.get(entry["alias_of"])  # the price file's aliases, as litellm resolves them
            if isinstance(entry, Mapping):
                inp, out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
                if isinstance(inp, int | float) and isinstance(out, int | float):
                    return float(inp), float(out)
        return None

    def price(self, model: str, provider: str = "") -> tuple[float, float] | None:
        """USD per (input token, output token) of ``model``, or None when it has no price."""
        key = (model, provider)
        try:
            return self._cache[key]
        except KeyError:
            pass
        if len(self._cache) > 10_000:  # model names come from spans: keep the cache bounded
            self._cache.clear()
        found = self._prices.get(model) or self._lookup(model, provider)
        self._cache[key] = found
        return found

    def cost(
        self, model: str, provider: str, input_tokens: int, output_tokens: int
    ) -> tuple[float | None, str]:
        """(USD, '') for a priced call, or (None, reason) with reason NO_MODEL or UNKNOWN_MODEL."""
        if not model:
            return None, NO_MODEL
        p = self.price(model, provider)
        if p is None:
            return None, UNKNOWN_MODEL
        return input_tokens * p[0] + output_tokens * p[1], ""
