"""What the local judge reads from a conversation and from a tool's result (docs/judging.md).

Three rules (DESIGN.md "Conversations, tools and agents"):

* **A follow-up means what it follows.** "And can we delete them sooner?" names nothing
  itself: when a query refers back (a pronoun or determiner without its noun, "and ...",
  "what about ...", or at most two content words) its topic is its own words plus those of
  the user turns it follows (back to the first one that stands on its own, three at most).
  The topic decides answer relevance (is a claim about what was asked) and answerability
  (is an abstention a false refusal). The claims are still read against the chunks with the
  query's own words, as without a conversation.
* **What the user said is not a hallucination.** A claim the chunks do not support but the
  user's own statements do ("You were charged a $35 fee" after "I was charged a $35 fee")
  repeats the user's premise: it is ``supported`` with no supporting chunk and marked
  ``restates_user``, and, resting on no evidence, it does not count against citation
  completeness. Only the user's statements count: a question states nothing.
* **An earlier answer is never evidence.** The assistant's earlier turns are not read as
  evidence at all, so a claim repeated from an earlier answer stays unsupported when the
  chunks do not support it (a repeated hallucination is still one).

A tool call's result is evidence like a chunk (``source_type`` ``tool``). Its text is read
with the call around it, ``<tool name in words> (<arguments>): <result>``, so that a result
such as ``1520.33`` supports "the balance of account A-7 is 1,520.33" through the tool's
name and arguments, as a retrieved sentence would through its own words; a JSON result is
read as a sentence of its fields in words (``Account id ACC-7 balance 1520.33 currency EUR.``),
a list of objects (rows) as a sentence each.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..text.tokens import profile
from .claim_features import ChunkIndex
from .claim_model import ClaimModel
from .evidence import ChunkEvidence, build_evidence, split_sentences
from .reading import read_claim, settle
from .support import SupportModel

__all__ = [
    "USER_EVIDENCE_ID",
    "evidence_records",
    "topic_stems",
    "is_follow_up",
    "user_statements",
    "user_evidence",
    "restates_user",
]

USER_EVIDENCE_ID = "user"  # the id of the user's statements read as one piece of evidence
_PRIOR_TURNS = 3  # user turns a follow-up may reach back over
_SHORT = 2  # a query with at most this many content words leans on the turns before it

# Words that refer back to something said before, and openings that continue a turn.
_BACK_REFERENCES = frozenset(
    "it its itself they them their theirs this that these those there he him his she her one ones such "
    "same former latter else another other".split()
)
_CONTINUATIONS = ("and", "but", "or", "so", "then", "also", "what about", "how about", "what if", "and if")
_WORD_RE = re.compile(r"[a-z']+")
# Words of a sentence that asks rather than states ("I wonder if ...", "not sure whether ...").
_ASKING = frozenset("wonder wondering whether curious unsure".split())
# Openings of a question without a question mark ("can I ...", "how do ...").
_QUESTION_OPENINGS = frozenset(
    "who whom whose what which when where why how can could may might should would will shall do does did "
    "is are was were am has have had".split()
)


def evidence_records(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chunks as the judge reads them: a tool's result with its call around it (module
    docstring), every other chunk as it is."""
    if not any(ch.get("source_type") == "tool" for ch in chunks):
        return chunks
    return [{**ch, "content": _tool_text(ch)} if ch.get("source_type") == "tool" else ch for ch in chunks]


def _tool_text(chunk: dict[str, Any]) -> str:
    head = _words_of(chunk.get("tool") or "")
    arguments = _parsed(chunk.get("query") or "")
    inline = _inline(arguments) if isinstance(arguments, dict) else str(arguments).strip()
    if inline and inline not in ("{}", "[]"):
        head = f"{head} ({inline})" if head else inline
    head = head[:1].upper() + head[1:]
    result = _parsed(chunk["content"])
    if isinstance(result, dict | list):
        body = " ".join(_sentences(result, "", 0))
        return f"{head}. {body}" if head else body
    return f"{head}: {chunk['content']}" if head else chunk["content"]


def _words_of(name: str) -> str:
    """An identifier in words: ``get_account_balance`` / ``getAccountBalance`` -> ``get account balance``."""
    return " ".join(w for w in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", name) if w).lower()


def _parsed(text: str) -> Any:
    """A JSON object or array in ``text``, else the text."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):
            pass
    return text


def _inline(arguments: dict[str, Any]) -> str:
    """A tool call's arguments as words: ``account id ACC-7, currency EUR``."""
    return ", ".join(f"{_words_of(str(k))} {_scalar(v)}" for k, v in arguments.items())


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


_MAX_DEPTH = 8  # a result nested deeper is read as its JSON text


def _sentences(value: Any, path: str, depth: int) -> list[str]:
    """A JSON result as sentences: an object as one sentence of its fields in words
    (``balance 1520.33 currency EUR``, nested fields named by their path), each object of a
    list (a row) as a sentence of its own. No commas: a field is not one of a list of
    conditions (:func:`.judge._omitted_condition` reads commas as those)."""
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value) and depth < _MAX_DEPTH:
        return [s for v in value for s in _sentences(v, path, depth + 1)]
    text = " ".join(_fields(value, path, depth)).strip()
    return [f"{text[:1].upper()}{text[1:]}."] if text else []


def _fields(value: Any, path: str, depth: int) -> list[str]:
    if depth < _MAX_DEPTH and isinstance(value, dict):
        return [
            f for k, v in value.items() for f in _fields(v, f"{path} {_words_of(str(k))}".strip(), depth + 1)
        ]
    if depth < _MAX_DEPTH and isinstance(value, list):
        return [f for v in value for f in _fields(v, path, depth + 1)] if value else []
    text = _scalar(value).rstrip(".")
    return [f"{path} {text}" if path else text]


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower())


def is_follow_up(query: str, stems: frozenset[str]) -> bool:
    """Whether ``query`` (its content stems ``stems``) leans on the turns before it."""
    words = _words(query)
    if len(stems) <= _SHORT or any(w in _BACK_REFERENCES for w in words):
        return True
    opening = " ".join(words[:2])
    return any(opening == c or opening.startswith(c + " ") for c in _CONTINUATIONS)


def topic_stems(
    query: str, conversation: list[dict[str, str]], question_words: frozenset[str]
) -> frozenset[str]:
    """The content stems of what the query asks (module docstring): its own, and those of the
    user turns it follows when it is a follow-up."""
    own = frozenset(s for s in profile(query).stem_set if s not in question_words)
    if not conversation or not is_follow_up(query, own):
        return own
    topic = set(own)
    users = [m["content"] for m in conversation if m["role"] == "user"]
    for text in reversed(users[-_PRIOR_TURNS:]):
        stems = frozenset(s for s in profile(text).stem_set if s not in question_words)
        topic |= stems
        if not is_follow_up(text, stems):
            break
    return frozenset(topic)


def _is_question(sentence: str) -> bool:
    """A question, or a statement that only wraps one ("I wonder if ...", "not sure whether ...")."""
    s = sentence.strip()
    if s.endswith("?"):
        return True
    words = _words(s)
    return bool(words) and (words[0] in _QUESTION_OPENINGS or any(w in _ASKING for w in words))


def user_statements(query: str, conversation: list[dict[str, str]]) -> list[str]:
    """The user's own statements: the sentences of the current turn and of the earlier user
    turns that neither ask nor wrap a question."""
    texts = [m["content"] for m in conversation if m["role"] == "user"] + [query]
    return [s.strip() for text in texts for s in split_sentences(text) if s.strip() and not _is_question(s)]


def user_evidence(query: str, conversation: list[dict[str, str]]) -> list[ChunkEvidence]:
    """The user's statements as one piece of evidence ([] when the user stated nothing)."""
    statements = user_statements(query, conversation)
    if not statements:
        return []
    text = " ".join(s if s[-1] in ".!" else f"{s}." for s in statements)
    return build_evidence([{"id": USER_EVIDENCE_ID, "content": text, "metadata": {}}])


def restates_user(
    texts: list[str],
    user: list[ChunkEvidence],
    qstems: frozenset[str],
    model: SupportModel,
    claim_model: ClaimModel,
    threshold: float,
) -> list[bool]:
    """Per claim text, whether the user's statements ``user`` support it by the judge's own
    verdict rule (:func:`.reading.settle`: the pair model, the claim model, the threshold)."""
    if not user:
        return [False] * len(texts)
    index = ChunkIndex(user)
    out = []
    for text in texts:
        reading = read_claim(text, user, index, qstems, model)
        ce = reading.evidence
        p = claim_model.probability(ce.features, ce.numbers_elsewhere, ce.ordinals_missing)
        supporting, _ = settle(reading, user, p, threshold, claim_model.number_cap)
        out.append(bool(supporting))
    return out
