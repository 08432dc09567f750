"""Redaction of secrets and personal data before a span leaves the process.

Runs in the export thread (or at span end for ``exporter="none"``), never on
the hot request path. Built-in patterns cover e-mail addresses, phone numbers,
payment card numbers (Luhn-checked, so order numbers survive) and common API
key / token formats; a user callable can replace or extend them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["BUILTIN_PATTERNS", "Redactor", "luhn_valid", "redact_builtin"]

# Order matters: tokens first (they may contain digit runs or '@').
_TOKEN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
    ("BEARER_TOKEN", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{12,}=*")),
    ("API_KEY", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}")),
    ("AWS_ACCESS_KEY", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "GITHUB_TOKEN",
        re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}"),
    ),
    ("SLACK_TOKEN", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("GOOGLE_API_KEY", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    (
        "PRIVATE_KEY",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ),
]
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
# 13-19 digits, optionally grouped by spaces or dashes.
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,38}(?![\d-])")
# International (+CC ...) or North-American style numbers; at least 9 digits in total.
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]\d{2,4}){1,4}(?![\w])"
    r"|(?<![\w+])\+\d{9,15}\b"
)

BUILTIN_PATTERNS: tuple[str, ...] = tuple(name for name, _ in _TOKEN_PATTERNS) + (
    "EMAIL",
    "CARD_NUMBER",
    "PHONE",
)


def luhn_valid(digits: str) -> bool:
    """True when the digit string passes the Luhn checksum (payment card numbers do)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_sub(match: re.Match[str]) -> str:
    """Redact the longest Luhn-valid 13-19 digit window of a digit run (it may carry extra digits)."""
    text = match.group(0)
    positions = [i for i, ch in enumerate(text) if ch.isdigit()]
    digits = "".join(text[i] for i in positions)
    for length in range(min(19, len(digits)), 12, -1):
        for start in range(0, len(digits) - length + 1):
            if luhn_valid(digits[start : start + length]):
                first, last = positions[start], positions[start + length - 1]
                return text[:first] + "[REDACTED:CARD_NUMBER]" + text[last + 1 :]
    return text


def _phone_sub(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(ch.isdigit() for ch in text)
    # Dates (2024-01-02) and short numbers are not phone numbers.
    if digits < 9 or digits > 15 or re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return text
    return "[REDACTED:PHONE]"


def redact_builtin(text: str) -> str:
    """Replace every built-in pattern in ``text`` with ``[REDACTED:KIND]``."""
    if not text:
        return text
    for name, pattern in _TOKEN_PATTERNS:
        text = pattern.sub(f"[REDACTED:{name}]", text)
    if "@" in text:
        text = _EMAIL.sub("[REDACTED:EMAIL]", text)
    text = _CARD.sub(_card_sub, text)
    text = _PHONE.sub(_phone_sub, text)
    return text


class Redactor:
    """A configured redaction function: the built-ins, a user callable, or both.

    ``Redactor(builtin=True, custom=fn)`` applies the built-in patterns then
    ``fn``. A custom callable that raises makes the value fully redacted
    (``[REDACTED]``): failing closed is the safe side for data hygiene.
    """

    __slots__ = ("builtin", "custom")

    def __init__(self, builtin: bool = True, custom: Callable[[str], str] | None = None):
        self.builtin = builtin
        self.custom = custom

    def __call__(self, text: str) -> str:
        if self.builtin:
            text = redact_builtin(text)
        if self.custom is not None:
            try:
                out = self.custom(text)
            except Exception:  # noqa: BLE001 - a broken user redactor must not leak data
                return "[REDACTED]"
            text = out if isinstance(out, str) else "[REDACTED]"
        return text
