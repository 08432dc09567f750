"""What a turn of a conversation asks: the follow-up rewriter of the demo's chat mode.

A follow-up ("And can we delete them sooner?") means nothing to a retriever on its own. The
policy assistant rewrites it from the conversation into the standalone question it stands for
before retrieving, as a chat RAG app has an LLM do. Here the rewrite is scripted from the
corpus (``data/queries.json``): each user turn of the conversation, oldest first, is read as a
template's phrasing, a tool question, or a follow-up of the turn before it; a turn retyped
without its capitals or question mark (a user asking again) reads as the phrasing, or the
turn before it, that it repeats.
The current turn is rewritten to the standalone phrasing of what it means; a turn the script
does not know is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .corpus import Corpus

__all__ = ["FollowUpRewriter", "normalized", "user_turns"]

_PUNCT = re.compile(r"[^\w\s-]")


def normalized(text: str) -> str:
    """Lower case, punctuation dropped, spaces collapsed: how a retyped question compares."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def user_turns(history: Sequence[Any] | None) -> list[str]:
    """The user messages' texts of an OpenAI-style history (``{"role", "content"}``), oldest first."""
    out = []
    for m in history or ():
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
            out.append(m["content"])
    return out


class FollowUpRewriter:
    """Rewrites a turn into its standalone question from the conversation before it."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        # normalised phrasing -> (what it means: a template or tool question id, its standalone text)
        self._standalone: dict[str, tuple[str, str]] = {}
        for t in corpus.templates:
            for p in (*t.phrasings, *t.legacy_phrasings):
                self._standalone[normalized(p)] = (t.id, p)
        for q in corpus.tool_questions:
            for p in q.phrasings:
                self._standalone[normalized(p)] = (q.id, p)
        self._follow: dict[tuple[str, str], str] = {
            (f.after, normalized(p)): f.means for f in corpus.follow_ups for p in f.phrasings
        }

    def _first_phrasing(self, meaning: str) -> str:
        if meaning.startswith("T"):
            return self.corpus.tool_question(meaning).phrasings[0]
        return self.corpus.template(meaning).phrasings[0]

    def read(self, text: str, previous: tuple[str, str] | None) -> tuple[str, str] | None:
        """(what ``text`` means, its standalone question) after a turn that read as ``previous``
        ((meaning, the turn's text) or None); None for a question the script does not know."""
        key = normalized(text)
        if key in self._standalone:
            return self._standalone[key]
        if previous is not None and key == normalized(previous[1]):  # the last turn asked again
            return previous[0], self._first_phrasing(previous[0])
        meaning = self._follow.get((previous[0] if previous else "", key))
        return (meaning, self._first_phrasing(meaning)) if meaning else None

    def resolve(self, question: str, history: Sequence[Any] | None) -> tuple[str | None, str]:
        """(what the turn means or None, its standalone question) given the conversation before it."""
        previous: tuple[str, str] | None = None
        for text in user_turns(history):
            read = self.read(text, previous)
            previous = (read[0], text) if read else None
        read = self.read(question, previous)
        return (read[0], read[1]) if read else (None, question)

    def rewrite(self, question: str, history: Sequence[Any] | None) -> str:
        """The standalone question ``question`` stands for after ``history``."""
        return self.resolve(question, history)[1]
