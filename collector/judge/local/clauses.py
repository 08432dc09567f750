"""Clauses: where a sentence's verb is, whether a conjunction joins two clauses, and the head a
subject-less clause borrows.

Claim extraction (:mod:`.claims`) cuts a sentence at a conjunction only between clauses, and
gives a clause that lost its subject ("... and documented authorization from the records
officer") the head of the first ("Earlier deletion requires"). These are word-level readings
of English without part-of-speech data: an auxiliary, or a word ending in -s/-ed after a word
that is no determiner or preposition, is verb-like.
"""

from __future__ import annotations

import re

from ..text.morphology import IRREGULAR

__all__ = [
    "AUX",
    "PREPOSITIONS",
    "complete",
    "has_verb",
    "independent_clause",
    "joins_clauses",
    "main_verb_index",
    "split_head",
    "starts_with_verb",
    "verb_index",
]

AUX = frozenset(
    "is are was were be been being am has have had do does did must shall should will would can could may "
    "might requires require required permits permit permitted allows allow allowed means mean".split()
)
_DET_PREP = frozenset(
    "the a an of from to for in on at by with and or this that these those all any each every some no "
    "many few several its their his her our your my".split()
)
PREPOSITIONS = frozenset(
    "after before within from of with by upon to for unless if until that during under over without via "
    "in on at than once when where into onto through against".split()
)


def verb_index(words: list[str]) -> int:
    """Index of the first verb-like word (after the first word), or -1."""
    lw = [w.lower().strip(",.;:") for w in words]
    for i in range(1, len(lw)):
        if lw[i] in AUX:
            return i
    for i in range(1, len(lw)):
        w = lw[i]
        if lw[i - 1] in PREPOSITIONS:
            break  # past a preposition we are inside a phrase, not at the clause's verb
        if len(w) > 3 and (w.endswith("s") or w.endswith("ed")) and not w.endswith("ss"):
            if lw[i - 1] not in _DET_PREP and not lw[i - 1][:1].isdigit() and not w.endswith("ous"):
                return i
    return -1


_RELATIVES = frozenset(("which", "who", "whose", "whom", "where"))


def main_verb_index(words: list[str]) -> int:
    """:func:`verb_index` of the words outside a relative clause set off by commas ("The
    deal, which the family has agreed to support, still requires ..."), as an index into
    ``words``: the head a subject-less clause borrows ends before the main verb, not the
    relative clause's."""
    kept: list[int] = []
    skipping = False
    for i, w in enumerate(words):
        if not skipping and i and words[i - 1].endswith(",") and w.lower() in _RELATIVES:
            skipping = True
        if not skipping:
            kept.append(i)
        elif w.endswith(","):
            skipping = False
    vi = verb_index([words[i] for i in kept])
    return kept[vi] if vi >= 0 else -1


_PIECE_END_RE = re.compile(r"[,:;]")
# A word before the verb that leaves the subject unfinished: the verb is a later
# coordination's, and the "and" before the tail joins nouns.
_COORDINATORS = frozenset(("and", "or", "but", "nor"))
# Words whose phrase a bare "and" completes ("between X and Y", "both X and Y").
_PAIRED = frozenset(("between", "both"))


def joins_clauses(conjunction: str, head: str, tail: str) -> bool:
    """Whether ``conjunction`` (a match of :mod:`.claims`'s conjunction pattern) joins two clauses, so the
    sentence is cut there. A semicolon always does; otherwise both sides need a verb. A bare
    "and" (no comma before it) more often joins nouns or verbs of one clause ("green and red
    light", "softens and bends", "vet visits, good nutrition and exercise"), so there the tail
    must read as a clause before its first comma, with words after its verb, and the head's
    last piece (after its last comma or colon: "works offline: maps and timetables can be
    downloaded") must have a verb of its own (an auxiliary, or a verb-like word
    in a piece longer than a list item's three words)."""
    conjunction = conjunction.strip()
    if conjunction.startswith(";"):
        return True
    tail_words, head_words = tail.split(), head.split()
    vt = verb_index(tail_words)
    if vt < 1 or verb_index(head_words) < 1:
        return False
    if tail_words[vt - 1].lower() in _COORDINATORS:
        return False  # "shareholder and regulatory approval and is expected to": no subject
    if conjunction.startswith(","):
        return True
    if vt == len(tail_words) - 1 or any(w.endswith(",") for w in tail_words[:vt]):
        return False
    piece = _PIECE_END_RE.split(head)[-1].split()
    if any(w.lower() in _PAIRED for w in piece[-3:]):
        return False  # "between Galway and Athenry", "both adults and children"
    if any(w.lower() in AUX for w in piece[1:]):
        return True
    return len(piece) > 3 and verb_index(piece) >= 1


def split_head(text: str, absorb_participle: bool = True) -> tuple[str, str]:
    """Split a clause after its first verb: ("Earlier deletion requires", "release of ...").
    With ``absorb_participle`` a following participle joins the head ("are rotated")."""
    words = text.split()
    vi = verb_index(words)
    if vi < 1:
        return "", text
    end = vi + 1
    while (
        absorb_participle
        and end < len(words)
        and (words[end].lower() in ("not", "be", "been") or words[end].lower().endswith(("ed", "en")))
    ):
        end += 1  # "are rotated", "must not be disclosed"
    return " ".join(words[:end]), " ".join(words[end:])


_IRREGULAR_PARTICIPLES = frozenset(
    "kept held made sent set put built paid told sold found done read left run bought brought caught taught "
    "thought sought lost met spent understood stood won withheld upheld shut cut let led fed hung struck".split()
)
_NOT_PARTICIPLES = frozenset("when then often even open seven eleven children women men garden token".split())
_SUBORDINATORS = frozenset("that which who whom whose whether where when if because".split())
# Forms the irregular table relates to a verb that are no verbs themselves.
_NOT_VERBS = frozenset(("dead", "death"))
_PRONOUNS = frozenset("it they he she this that these those which who we you i there".split())


def independent_clause(text: str) -> bool:
    """Whether ``text`` has a subject of its own: it opens with a pronoun, or an
    auxiliary/verb follows words before it ("the office is in Paris"). A verb
    phrase that shares the sentence's subject ("may not repeat ...") is not."""
    words = [w.lower().strip(",.;:") for w in text.split()]
    if not words:
        return False
    if words[0] in _PRONOUNS:
        return True
    if words[0] in AUX:
        return False
    for w in words[1:]:
        if w in _SUBORDINATORS:
            return False  # "confirmation that the matter is closed": the verb belongs to a nested clause
        if w in AUX:
            return True
    return False


def starts_with_verb(text: str) -> bool:
    """Whether ``text`` opens with an auxiliary or a participle ("kept online ...")."""
    words = text.split()
    if not words:
        return False
    w = words[0].lower().strip(",.;:")
    return (
        w in AUX
        or w in _IRREGULAR_PARTICIPLES
        or (len(w) > 3 and w.endswith(("ed", "en")) and w not in _NOT_PARTICIPLES)
    )


def has_verb(text: str) -> bool:
    """Whether ``text`` reads as a clause (a verb after a subject, or an auxiliary)."""
    words = text.split()
    return verb_index(words) >= 1 or any(w.lower().strip(",.;:") in AUX for w in words)


def complete(fragment: str, head_words: list[str], verb_at: int) -> str:
    """Give a subject-less fragment the head of the clause it was split from."""
    words = fragment.split()
    if not words or verb_at < 0:
        return fragment
    first = words[0].lower().strip(",")
    if first in _PRONOUNS:
        return fragment  # "they pass": a subject of its own
    verb = head_words[verb_at].lower()
    same_form = (first.endswith("s") and verb.endswith("s")) or (first.endswith("ed") and verb.endswith("ed"))
    own_verb = len(words) > 1 and words[1].lower().strip(",.;:") in AUX  # "crocodiles have ..."
    # An irregular simple past ("and said there are no plans", "and grew 3%"); not a participle
    # in -en/-wn, which opens a noun phrase as often ("and written confirmation").
    past = (
        first in IRREGULAR and first not in _NOT_VERBS and not first.endswith(("en", "wn")) and not own_verb
    )
    if first in AUX or past or (len(first) > 3 and same_form and not first.endswith("ss") and not own_verb):
        return " ".join(head_words[:verb_at] + words)
    if verb_index(words) < 0 and not any(w.lower() in AUX for w in words):
        return " ".join(head_words[: verb_at + 1] + words)
    return fragment
