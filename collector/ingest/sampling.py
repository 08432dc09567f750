"""Which assembled traces get judged: base rate, rules and a per-minute budget.

Decisions are deterministic so a replay makes the same ones:

* the base rate compares a keyed hash of the trace id with ``rate`` (the same
  trace id always lands on the same side, whatever the order of arrival);
* rules look only at the trace's content (first match wins; ``always`` samples,
  ``never`` excludes);
* the budget caps budgeted samples per minute of *trace time* (the root span's
  start). Its counter for a minute starts from what storage already holds for
  that minute (``budget_loader``), and the pipeline re-uses stored decisions for
  traces it replays, so a crash and replay neither re-spends nor changes the
  budget.

Sampling can be stratified by variant (``per_variant_per_minute``): a trace
that carries a ``rag.variant`` and matches no rule is judged while its
variant's quota for that minute of trace time lasts (reason
``variant:<label>``, the bounded label of :mod:`..serve.variants`), else not
(``variant_full``); the base rate does not apply to it. So a 5% arm is judged
as often as the 95% arm, as long as its traffic fills the quota. The quota
counters start from storage and replays re-use stored decisions, like the
budget's.

The reason is stored with the trace: ``rule:<name>``, ``rate``, ``budget``
(rate-sampled but over budget), ``variant:<label>``, ``variant_full``,
``never:<name>`` or ``unsampled``.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from ..core.model import RagTrace

__all__ = ["Rule", "SamplingPolicy", "Sampler", "trace_hash", "looks_like_refusal", "BUDGETED_REASONS"]

_REFUSAL = re.compile(
    r"\b(i (?:do not|don't|cannot|can't) (?:know|answer|find|help)|i(?:'m| am) (?:sorry|unable|not able)"
    r"|(?:cannot|can't|unable to) (?:answer|determine|find|provide)|not (?:able|enough information) to"
    r"|(?:do|does) not (?:establish|contain|mention|say|specify|provide)|no (?:relevant )?information"
    r"|(?:insufficient|not enough) (?:information|context)|not (?:mentioned|covered|stated) in)",
    re.IGNORECASE,
)

BUDGETED_REASONS = ("rate",)


# Words at least one of which every refusal pattern contains: a cheap set test skips the regex
# (about 25 us per answer) for the vast majority of answers.
_TRIGGERS = frozenset(
    "know answer find help sorry unable able cannot can't determine provide establish contain mention say "
    "specify information enough insufficient mentioned covered stated".split()
)
_PUNCT_CHARS = ".,;:!?()[]{}\"'`"
_PUNCT = str.maketrans({c: " " for c in _PUNCT_CHARS})
# The same tokenising for ASCII text on bytes, about 3x cheaper (str.translate with a mapping
# is slow). \x1c-\x1f are whitespace to str.split() but not to bytes.split(): mapped too.
_PUNCT_BYTES = bytes.maketrans(_PUNCT_CHARS.encode() + b"\x1c\x1d\x1e\x1f", b" " * (len(_PUNCT_CHARS) + 4))
_TRIGGERS_BYTES = frozenset(w.encode() for w in _TRIGGERS)


# Every match of _REFUSAL in lowercased ASCII text contains one of these (each alternative of
# the pattern holds one verbatim), so an ASCII answer without any of them is no refusal: a few
# substring scans instead of tokenising it. Not for other text: under IGNORECASE a dotless i
# or a long s matches i or s.
_REFUSAL_LITERALS = ("not ", "n't ", "i'm", "i am", "unable ", "information", "insufficient ")


def looks_like_refusal(answer: str) -> bool:
    """True for answers that look like a refusal or abstention (an always-sample rule)."""
    if not answer:
        return False
    text = answer[:2000].lower()
    if text.isascii():
        for literal in _REFUSAL_LITERALS:
            if literal in text:
                break
        else:
            return False
        if _TRIGGERS_BYTES.isdisjoint(text.encode().translate(_PUNCT_BYTES).split()):
            return False
    elif _TRIGGERS.isdisjoint(text.translate(_PUNCT).split()):
        return False
    return _REFUSAL.search(text) is not None


def _hash_of(data: bytes) -> float:
    digest = hashlib.blake2b(data, digest_size=8).digest()
    return int.from_bytes(digest, "big") / 18446744073709551616.0


def _prefixed_hash(prefix: hashlib.blake2b, data: bytes) -> float:
    """``_hash_of(p + data)`` where ``prefix`` has hashed ``p``: a copy of its state takes the
    rest (the same digest as hashing the whole, without constructing and keying a hash)."""
    h = prefix.copy()
    h.update(data)
    return int.from_bytes(h.digest(), "big") / 18446744073709551616.0


def trace_hash(trace_id: str, seed: str) -> float:
    """A uniform number in [0, 1) from the trace id and seed (blake2b, not the trace id's own bits)."""
    return _hash_of(f"{seed}:{trace_id}".encode())


_OPS = ("equals", "in", "lt", "gt", "exists")
_LIST_KEYS = ("risk_level", "service", "route", "query_type", "model")


class Rule:
    """One sampling rule: a name, ``always`` or ``never``, and conditions that must all hold."""

    def __init__(self, name: str, action: str, match: Mapping[str, Any]) -> None:
        if action not in ("always", "never"):
            raise ValueError(f"rule {name!r}: action must be 'always' or 'never', got {action!r}")
        if not match:
            raise ValueError(f"rule {name!r}: match must name at least one condition")
        self.name = name
        self.action = action
        self.checks: list[Callable[[RagTrace], bool]] = []
        m = dict(match)
        attr = m.pop("attribute", None)
        ops = {op: m.pop(op) for op in _OPS if op in m}
        if attr is not None:
            if len(ops) != 1:
                raise ValueError(f"rule {name!r}: attribute needs exactly one of {', '.join(_OPS)}")
            self.checks.append(self._attribute_check(str(attr), *next(iter(ops.items()))))
        elif ops:
            raise ValueError(f"rule {name!r}: {', '.join(ops)} needs 'attribute'")
        for key, value in m.items():
            if key == "error":
                want = bool(value)
                self.checks.append(lambda t, w=want: (t.status == "error") == w)
            elif key == "refusal":
                want = bool(value)
                self.checks.append(lambda t, w=want: looks_like_refusal(t.answer) == w)
            elif key == "top_score_below":
                limit = float(value)
                self.checks.append(
                    lambda t, x=limit: not t.chunk_count or ((top := t.top_score) is not None and top < x)
                )
            elif key in _LIST_KEYS:
                allowed = {str(v) for v in (value if isinstance(value, list) else [value])}
                self.checks.append(lambda t, k=key, a=allowed: getattr(t, k) in a)
            else:
                raise ValueError(f"rule {name!r}: unknown condition {key!r}")
        # What the sampler calls once per trace per rule: the check itself when there is one
        # (most rules), which saves a call level on every trace.
        self.predicate: Callable[[RagTrace], bool] = self.checks[0] if len(self.checks) == 1 else self.matches

    @staticmethod
    def _attribute_check(attr: str, op: str, arg: Any) -> Callable[[RagTrace], bool]:
        def value(t: RagTrace) -> Any:
            return t.attributes.get(attr)

        if op == "exists":
            return lambda t: (attr in t.attributes) == bool(arg)
        if op == "equals":
            return lambda t: value(t) is not None and str(value(t)) == str(arg)
        if op == "in":
            allowed = {str(a) for a in (arg if isinstance(arg, list) else [arg])}
            return lambda t: value(t) is not None and str(value(t)) in allowed

        limit = float(arg)

        def compare(t: RagTrace) -> bool:
            try:
                v = float(value(t))
            except (TypeError, ValueError):
                return False
            return v < limit if op == "lt" else v > limit

        return compare

    def matches(self, trace: RagTrace) -> bool:
        for check in self.checks:  # a plain loop: all() over a generator costs more than the checks
            if not check(trace):
                return False
        return True


class SamplingPolicy:
    """The parsed ``sampling`` section."""

    def __init__(
        self,
        rate: float,
        seed: str = "ragpulse",
        rules: list[Rule] | None = None,
        budget_per_minute: int | None = None,
        budget_includes_rules: bool = False,
        per_variant_per_minute: int | None = None,
    ) -> None:
        self.rate = float(rate)
        self.per_variant_per_minute = per_variant_per_minute
        self.seed = seed
        self.rules = rules or []
        self.budget_per_minute = budget_per_minute
        self.budget_includes_rules = budget_includes_rules

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> SamplingPolicy:
        rules = []
        for i, r in enumerate(section.get("rules") or []):
            if not isinstance(r, Mapping):
                raise ValueError(f"rule #{i + 1} must be a mapping")
            rules.append(
                Rule(str(r.get("name") or f"rule{i + 1}"), r.get("action", "always"), r.get("match") or {})
            )
        return cls(
            rate=float(section.get("rate", 0.1)),
            seed=str(section.get("seed", "ragpulse")),
            rules=rules,
            budget_per_minute=section.get("budget_per_minute"),
            budget_includes_rules=bool(section.get("budget_includes_rules", False)),
            per_variant_per_minute=section.get("per_variant_per_minute"),
        )

    def budgeted_reasons(self) -> list[str]:
        """Stored reasons whose traces count against the budget."""
        reasons = list(BUDGETED_REASONS)
        if self.budget_includes_rules:
            reasons += [f"rule:{r.name}" for r in self.rules if r.action == "always"]
        return reasons


class Sampler:
    """Applies a :class:`SamplingPolicy`, keeping per-minute budget counters."""

    MINUTE_NS = 60_000_000_000

    def __init__(
        self,
        policy: SamplingPolicy,
        budget_loader: Callable[[int], int] | None = None,
        variant_label: Callable[[str], str] = str,
        stratum_loader: Callable[[int, str], int] | None = None,
    ) -> None:
        """``variant_label`` maps a variant to its bounded stratum; ``stratum_loader(minute_ns,
        label)`` says how many stored traces of that minute the stratum already sampled."""
        self.policy = policy
        self.budget_loader = budget_loader
        self.variant_label = variant_label
        self.stratum_loader = stratum_loader
        self._spent: OrderedDict[tuple[int, str], int] = OrderedDict()
        self._strata: OrderedDict[tuple[int, str], int] = OrderedDict()
        # trace_hash's input is f"{seed}:" + the trace id: the prefix hashed once.
        self._hash_prefix = hashlib.blake2b(f"{policy.seed}:".encode(), digest_size=8)

    def _hash(self, trace_id: str) -> float:
        """trace_hash(trace_id, seed), without hashing the seed again for every trace."""
        return _prefixed_hash(self._hash_prefix, trace_id.encode())

    def _budget_ok(self, trace: RagTrace) -> bool:
        return self.budget_allows(trace.time)

    def budget_allows(self, time_ns: int) -> bool:
        """Spend one unit of the budget of ``time_ns``'s minute; False when it is used up."""
        limit = self.policy.budget_per_minute
        if limit is None:
            return True
        return _spend(self._spent, (time_ns // self.MINUTE_NS, ""), limit, self._load_budget)

    def _load_budget(self, key: tuple[int, str]) -> int:
        return self.budget_loader(key[0] * self.MINUTE_NS) if self.budget_loader else 0

    def _stratum_allows(self, time_ns: int, label: str, limit: int) -> bool:
        """Spend one unit of ``label``'s quota of ``time_ns``'s minute; False when it is used up."""
        return _spend(self._strata, (time_ns // self.MINUTE_NS, label), limit, self._load_stratum)

    def _load_stratum(self, key: tuple[int, str]) -> int:
        return self.stratum_loader(key[0] * self.MINUTE_NS, key[1]) if self.stratum_loader else 0

    def admit_rule(self, time_ns: int) -> bool:
        """Whether a rule-like decision taken outside :meth:`decide` (negative feedback) may sample
        a trace of ``time_ns``: always, unless rules spend the budget and it is used up."""
        return not self.policy.budget_includes_rules or self.budget_allows(time_ns)

    def decide(self, trace: RagTrace) -> tuple[bool, str]:
        """(sampled, reason) for a freshly seen trace; spends budget when sampled."""
        for rule in self.policy.rules:
            if rule.predicate(trace):
                if rule.action == "never":
                    return False, f"never:{rule.name}"
                if self.policy.budget_includes_rules and not self._budget_ok(trace):
                    return False, "budget"
                return True, f"rule:{rule.name}"
        quota = self.policy.per_variant_per_minute
        if quota is not None and trace.variant:
            label = self.variant_label(trace.variant)
            if self._stratum_allows(trace.time, label, quota):
                return True, f"variant:{label}"
            return False, "variant_full"
        rate = self.policy.rate
        if rate > 0 and self._hash(trace.trace_id) < rate:
            if not self._budget_ok(trace):
                return False, "budget"
            return True, "rate"
        return False, "unsampled"


def _spend(
    counters: OrderedDict[tuple[int, str], int],
    key: tuple[int, str],
    limit: int,
    loader: Callable[[tuple[int, str]], int],
) -> bool:
    """Spend one unit of the (minute, stratum) counter ``key`` (loaded from storage on first use,
    the oldest 10,000 kept); False when it has reached ``limit``."""
    spent = counters.get(key)
    if spent is None:
        spent = loader(key)
        counters[key] = spent
        while len(counters) > 10_000:
            counters.popitem(last=False)
    if spent >= limit:
        return False
    counters[key] = spent + 1
    return True
