"""Expand the few Go-template forms the mixin's annotations use, to state what promtool must render.

The promtool unit tests list each firing alert's expected annotations as text;
this expander produces that text from the rule's template, the alert's labels
and its value, and promtool (which runs Prometheus's real template engine)
checks that the two agree. Only the forms the renderers write are supported;
anything else raises, so a new form cannot slip into a rule untested.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["expand", "humanize", "humanize_duration"]

_WITH = re.compile(r"\{\{ with \$labels\.(\w+) \}\}(.*?)\{\{ end \}\}")
_QUERY = re.compile(
    r"\{\{ with query `([^`]*)` \}\}\{\{ \. \| first \| value \| humanizePercentage \}\}\{\{ end \}\}"
)
_ACTION = re.compile(r"\{\{ (.*?) \}\}")


def humanize(v: float) -> str:
    """Prometheus's ``humanize``: SI prefixes with four significant digits."""
    prefix = ""
    if abs(v) >= 1:
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(v) < 1000:
                break
            prefix, v = p, v / 1000
    elif v != 0:
        for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
            if abs(v) >= 1:
                break
            prefix, v = p, v * 1000
    return f"{v:.4g}{prefix}"


def humanize_duration(v: float) -> str:
    """Prometheus's ``humanizeDuration`` for durations of a second or more (and 0)."""
    if v == 0:
        return "0s"
    if abs(v) < 1:
        raise ValueError("sub-second durations are not used by the mixin's annotations")
    sign, v = ("-", -v) if v < 0 else ("", v)
    d = int(v)
    seconds, minutes, hours, days = d % 60, (d // 60) % 60, (d // 3600) % 24, d // 86400
    if days:
        return f"{sign}{days}d {hours}h {minutes}m {seconds}s"
    if hours:
        return f"{sign}{hours}h {minutes}m {seconds}s"
    if minutes:
        return f"{sign}{minutes}m {seconds}s"
    return f"{sign}{v:.4g}s"


def _action(action: str, labels: Mapping[str, str], value: float | None) -> str:
    if action.startswith("$labels."):
        return labels.get(action[len("$labels.") :], "")
    if value is None:
        raise ValueError(f"template uses $value but no value was given: {action}")
    forms = {
        "$value | humanizePercentage": lambda: _percent(value),
        "$value | humanize": lambda: humanize(value),
        "$value | humanizeDuration": lambda: humanize_duration(value),
        '$value | printf "%.3f"': lambda: f"{value:.3f}",
    }
    if action not in forms:
        raise ValueError(f"unsupported template action: {{{{ {action} }}}}")
    return forms[action]()


def _percent(v: float) -> str:
    return f"{v * 100:.4g}%"


def expand(
    template: str,
    labels: Mapping[str, str],
    value: float | None = None,
    queries: Mapping[str, float] | None = None,
) -> str:
    """``template`` rendered for an alert with ``labels`` and ``value``.

    ``queries`` maps the text of each ``{{ with query `...` }}`` the template makes to the
    value that query returns (a query missing from it raises).
    """

    def query_block(m: re.Match[str]) -> str:
        if queries is None or m.group(1) not in queries:
            raise ValueError(f"template queries {m.group(1)!r} but no value was given for it")
        return _percent(queries[m.group(1)])

    def with_block(m: re.Match[str]) -> str:
        bound = labels.get(m.group(1), "")
        return m.group(2).replace("{{ . }}", bound) if bound else ""

    text = _WITH.sub(with_block, _QUERY.sub(query_block, template))
    return _ACTION.sub(lambda m: _action(m.group(1), labels, value), text)
