"""The demo's synthetic policy corpus and query templates, loaded from package data.

``data/corpus.json`` holds a few dozen policy documents in several versions
(current, superseded) plus unofficial commentary; ``data/queries.json`` holds
the question templates the demo's traffic is drawn from, each with the topics
a complete answer needs and its gold facts, the follow-ups a conversation may
ask after a template, and the questions about the asker's own record that the
app's agent answers with a tool. Both are plain JSON so a reader can see
exactly what the retriever and the judge are working with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["Chunk", "GoldFact", "QueryTemplate", "FollowUp", "ToolQuestion", "Corpus", "load_corpus"]


#: The fields of a :class:`Chunk` its retriever hands on as metadata, in this order.
METADATA = ("status", "authoritative", "doc", "version", "title")


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage of one version of a policy document."""

    id: str
    content: str
    doc: str
    title: str
    version: int
    status: str  # current | superseded | commentary
    authoritative: bool
    topic: str
    conditions: tuple[str, ...] = ()

    @property
    def trustworthy(self) -> bool:
        """True for the current, authoritative text of a policy."""
        return self.status == "current" and self.authoritative

    def metadata(self) -> dict[str, Any]:
        """The metadata a retriever hands on with the chunk (what the judge sees): :data:`METADATA`."""
        return {name: getattr(self, name) for name in METADATA}


@dataclass(frozen=True)
class GoldFact:
    text: str
    chunk: str


@dataclass(frozen=True)
class QueryTemplate:
    """A question users ask, in current and legacy wordings, with what a full answer contains."""

    id: str
    topics: tuple[str, ...]
    gold: tuple[GoldFact, ...]
    phrasings: tuple[str, ...]
    legacy_phrasings: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.topics)


@dataclass(frozen=True)
class FollowUp:
    """A follow-up turn: asked right after a question of template ``after``, it means ``means``."""

    after: str
    means: str
    phrasings: tuple[str, ...]


@dataclass(frozen=True)
class ToolQuestion:
    """A question about the asker's own record: answered from ``tool``'s result and the policy of ``means``."""

    id: str
    tool: str
    means: str
    phrasings: tuple[str, ...]


@dataclass(frozen=True)
class Corpus:
    chunks: tuple[Chunk, ...]
    templates: tuple[QueryTemplate, ...]
    follow_ups: tuple[FollowUp, ...] = ()
    tool_questions: tuple[ToolQuestion, ...] = ()
    by_id: dict[str, Chunk] = field(repr=False, compare=False, default_factory=dict)
    _phrasebook: dict[str, QueryTemplate] = field(repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id.update({c.id: c for c in self.chunks})
        for t in self.templates:
            self._phrasebook.update(dict.fromkeys((*t.phrasings, *t.legacy_phrasings), t))

    @property
    def documents(self) -> list[str]:
        return sorted({c.doc for c in self.chunks})

    def template_for(self, question: str) -> QueryTemplate | None:
        """The template a question text was drawn from, if any (the generator's script)."""
        return self._phrasebook.get(question.strip())

    def template(self, template_id: str) -> QueryTemplate:
        """The template with this id."""
        return next(t for t in self.templates if t.id == template_id)

    def tool_question(self, question_id: str) -> ToolQuestion:
        """The tool question with this id."""
        return next(t for t in self.tool_questions if t.id == question_id)

    def follow_ups_after(self, template_id: str) -> list[FollowUp]:
        """The follow-ups a conversation may ask after a question of ``template_id``."""
        return [f for f in self.follow_ups if f.after == template_id]


def _read(name: str) -> Any:
    return json.loads(
        resources.files(__package__).joinpath("data").joinpath(name).read_text(encoding="utf-8")
    )


@lru_cache(maxsize=1)
def load_corpus() -> Corpus:
    """The packaged corpus and query templates (parsed once per process)."""
    raw = _read("corpus.json")
    chunks = tuple(
        Chunk(
            id=c["id"],
            content=c["content"],
            doc=d["doc"],
            title=d["title"],
            version=int(c["version"]),
            status=c["status"],
            authoritative=bool(c["authoritative"]),
            topic=c["topic"],
            conditions=tuple(c.get("conditions", ())),
        )
        for d in raw["documents"]
        for c in d["chunks"]
    )
    queries = _read("queries.json")
    templates = tuple(
        QueryTemplate(
            id=t["id"],
            topics=tuple(t["topics"]),
            gold=tuple(GoldFact(g["text"], g["chunk"]) for g in t["gold"]),
            phrasings=tuple(t["phrasings"]),
            legacy_phrasings=tuple(t.get("legacy_phrasings", ())),
        )
        for t in queries["templates"]
    )
    follow_ups = tuple(FollowUp(f["after"], f["means"], tuple(f["phrasings"])) for f in queries["follow_ups"])
    tools = tuple(
        ToolQuestion(t["id"], t["tool"], t["means"], tuple(t["phrasings"])) for t in queries["tool_questions"]
    )
    return Corpus(chunks=chunks, templates=templates, follow_ups=follow_ups, tool_questions=tools)
