"""What in an answer formats rather than says: spans claim extraction reads as blank.

- Markdown: emphasis and code marks, heading lines, lines that are only a bold label
  ("**Causes**", "2. **Treatment:**"), a table's header row, rule and cell bars.
- Links: a bare URL, and a markdown link's target (its text stays: "see the [guide](url)"
  reads "see the guide").
- A references section: the list after a line that only names it ("Sources:", "**References**",
  "## Further reading"), up to the first line that is no list item: titles and URLs of
  the sources, not claims.
"""

from __future__ import annotations

import re

__all__ = ["formatting_spans"]

_MARKDOWN_RE = re.compile(
    r"^[ \t]{0,3}#{1,6}[ \t].*$|^[ \t]*(?:[-*\u2022]\s+|\d{1,2}[.)]\s+)?\*\*[^*\n]+\*\*:?[ \t]*$|\*\*|__|`"
    # a table's header row (the row above its |---| rule), the rule itself, and the cell bars
    r"|^[ \t]*\|.*\|[ \t]*$(?=\n[ \t]*\|?[ \t:]*-{3,})|^[ \t]*\|?(?:[ \t:]*-{3,}[ \t:]*\|)+[ \t:-]*$|\|",
    re.M,
)
# A markdown link: group 1 is "[", group 2 "](target)".
_LINK_RE = re.compile(r"(\[)[^\[\]\n]{1,200}(\]\((?:https?://|www\.|/)[^()\s]*\))")
_URL_RE = re.compile(r"\b(?:https?://|www\.)[^\s<>()\[\]]*[^\s<>()\[\].,;:!?'\"]")
_REFERENCES_HEADING_RE = re.compile(
    r"^[ \t#*_]*(?:sources?|references?|citations?|further reading|bibliography|links?|"
    r"(?:sources|references) (?:used|cited|consulted))[ \t*_]*:?[ \t*_]*$",
    re.I,
)
_LIST_ITEM_RE = re.compile(r"^[ \t]*(?:[-*\u2022]|\d{1,2}[.)]|\[\^?\d{1,2}\]|\[[^\]\n]+\]\()")


def _references_spans(answer: str) -> list[tuple[int, int]]:
    """The list items after each references heading (blank lines inside the list kept)."""
    spans: list[tuple[int, int]] = []
    pos, inside = 0, False
    for line in answer.splitlines(keepends=True):
        body = line.strip()
        if _REFERENCES_HEADING_RE.match(body):
            inside = True
        elif inside and body and not _LIST_ITEM_RE.match(line):
            inside = False
        elif inside and body:
            spans.append((pos, pos + len(line.rstrip("\r\n"))))
        pos += len(line)
    return spans


def formatting_spans(answer: str) -> list[tuple[int, int]]:
    """The spans of ``answer`` that format rather than say (the module's list)."""
    spans = [m.span() for m in _MARKDOWN_RE.finditer(answer)]
    for m in _LINK_RE.finditer(answer):
        spans += [m.span(1), m.span(2)]
    spans += [m.span() for m in _URL_RE.finditer(answer)]
    return spans + _references_spans(answer)
