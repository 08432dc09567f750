"""Cheap text normalisation shared by the judges: tokens, stems, numbers, entities.

Everything here is pure Python and deterministic. The local judge calls these
once per chunk and once per claim, so they are written for speed (one regex
pass, set lookups) rather than linguistic completeness.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import chain

from .dates import DATE_TIME_RE, date_time_words, may_hold_date_time
from .morphology import base_form, derive
from .numbers import (
    CARDINALS,
    JOINING_FORMS,
    ORDINALS,
    join_digit_groups,
    joined_numbers,
    normalise_numbers,
    read_number_words,
)

__all__ = [
    "STOPWORDS",
    "NEGATIONS",
    "TextProfile",
    "profile",
    "profile_sentences",
    "stem_set",
    "stem",
    "content_tokens",
    "has_content",
    "tokenise",
    "is_plain",
    "char_classes",
    "plain_classes",
    "spaced",
    "normalise_numbers",
    "profile_tokens",
    "joined_numbers",
    "strip_markers",
    "case_forms",
    "skip_past",
]

STOPWORDS: frozenset[str] = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each either etc few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself just
    let me more most my myself neither nor of off on once only or other our ours ourselves out over own
    per same she should so some such than that the their theirs them themselves then there these they every
    this those through thus to too under until up upon us very via was we were what when where which
    while who whom whose why will with within would you your yours yourself yourselves may might must
    shall one ones another many much often also however therefore moreover furthermore additionally
    overall generally typically usually including include includes included e g ie eg i.e e.g s t
    according based provided source sources text title section""".split()
)

NEGATIONS: frozenset[str] = frozenset(
    "no not never none nobody nothing neither nor cannot cant without lack lacks lacking absent "
    "n't isn't aren't wasn't weren't don't doesn't didn't won't wouldn't shouldn't couldn't "
    "can't hasn't haven't hadn't unable fails failed".split()
)

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z']*[A-Za-z]|[A-Za-z]|\d+(?:[.,]\d+)*%?")
_findall = _WORD_RE.findall

# The fast path of :func:`tokenise`. ``_CLASSES`` maps each ASCII byte to its class: ``a`` for a
# letter, ``0`` for a digit, ``.`` for ``.``/``,``, ``a`` for ``%`` (so that ``5%`` reads as a
# digit next to a letter), ``'`` for an apostrophe, ``!`` for ``!``, ``?`` and the control
# characters (whitespace other than the space among them; the sentence splitter's fast path
# wants none of these) and a space for everything else.
# ``_SPACED`` keeps letters and digits and turns every other ASCII character into a space.


def _char_class(ch: str) -> str:
    if ch.isalpha() or ch == "%":
        return "a"
    if ch.isdigit():
        return "0"
    if ch in ".,":
        return "."
    if ch == "'":
        return ch
    if ch in "!?" or not ch.isprintable():
        return "!"
    return " "


_CLASSES = bytes(ord(_char_class(ch)) for ch in map(chr, range(128))) + bytes(128)
_SPACED = str.maketrans({i: ch if ch.isalnum() else " " for i, ch in enumerate(map(chr, range(128)))})
_MARKER_RE = re.compile(r"\s*\[(?:[^\[\]]{1,40})\]")

_SUFFIXES: tuple[str, ...] = (
    "ational",
    "ization",
    "fulness",
    "ousness",
    "iveness",
    "ations",
    "ation",
    "ments",
    "ment",
    "ness",
    "ions",
    "ion",
    "ings",
    "ing",
    "ies",
    "ied",
    "ives",
    "ive",
    "edly",
    "ers",
    "ed",
    "er",
    "ly",
    "es",
    "s",
)

_stem_cache: dict[str, str] = {}
STEM_LEN = 6


def stem(word: str) -> str:
    """A crude suffix stripper (deterministic, cached) good enough to match
    ``deleted``/``deletion``/``delete`` and ``logs``/``log``; truncated to 6
    characters so that derivations share a key."""
    cached = _stem_cache.get(word)
    if cached is not None:
        return cached
    w = base_form(word)
    if len(w) > 3:
        for suf in _SUFFIXES:
            if w.endswith(suf) and len(w) - len(suf) >= (3 if suf == "s" else 4):
                if suf == "s" and w.endswith(("ss", "us", "is")):
                    break
                w = w[: -len(suf)]
                break
        if w.endswith("e") and len(w) > 4:
            w = w[:-1]
        elif w.endswith("y") and len(w) > 3:
            w = w[:-1] + "i"
    out = derive(w)[:STEM_LEN]
    if len(_stem_cache) < 200_000:
        _stem_cache[word] = out
    return out


def strip_markers(text: str) -> str:
    """Remove citation markers such as ``[1]``, ``[C2]`` or ``[1, 3]``."""
    return _MARKER_RE.sub("", text)


def is_plain(text: str) -> bool:
    """Whether ``text``'s tokens are simply its letter runs and digit runs: it is ASCII,
    no letter touches a digit, no apostrophe sits inside a word and no number has a
    decimal/thousands separator or a percent sign. Then ``spaced(text).split()`` equals
    the token regex (see :func:`tokenise`); the same holds for every substring of a
    plain text. The checks are C-level substring searches over a class string.
    """
    c = char_classes(text)
    return c is not None and plain_classes(c)


def char_classes(text: str) -> bytes | None:
    """``text``'s class string (``_CLASSES``, one byte per character), None unless ASCII."""
    return text.encode().translate(_CLASSES) if text.isascii() else None


def plain_classes(c: bytes) -> bool:
    """:func:`is_plain` for a text's class string (:func:`char_classes`)."""
    return (48 not in c or not (b"a0" in c or b"0a" in c or b"0.0" in c)) and (
        39 not in c or not (b"a'a" in c or b"a''" in c)
    )


def spaced(text: str) -> str:
    """``text`` with every ASCII character other than a letter or digit turned into a space."""
    return text.translate(_SPACED)


def tokenise(text: str) -> list[str]:
    """The word and number tokens of ``text``: letter runs (with inner apostrophes:
    ``don't``), and numbers (``1,000``, ``3.5``, ``50%``), as ``_WORD_RE.findall(text)``
    finds them; a numeric date, a clock time or an abbreviated month is read as its sources
    write it (:func:`.dates.date_time_words`: "2020-01-15" as ``15 January 2020``, "3 p.m."
    and "15:00" as ``15:00``, "Jan. 2020" as ``January 2020``), and thousands grouped by
    spaces as one number (:func:`.numbers.join_digit_groups`: "5 000" as ``5,000``).

    Most text needs no regex: for a plain text (:func:`is_plain`) the tokens are the
    letter and digit runs, which ``str.translate`` and ``str.split`` find at C speed
    (a fraction of the regex's cost). Everything else goes to the regex.
    """
    c = char_classes(text)
    grouped = join_digit_groups(text, c)
    if grouped is not text:
        text, c = grouped, char_classes(grouped)
    tokens = _word_tokens(text, c)
    if not may_hold_date_time(text, tokens):
        return read_number_words(tokens)
    out: list[str] = []
    pos = 0
    for m in DATE_TIME_RE.finditer(text):
        words = date_time_words(m)
        if words is None:
            continue
        out += _word_tokens(text[pos : m.start()], None)
        out += words
        pos = m.end()
    out += _word_tokens(text[pos:], None)
    return read_number_words(out)


def _word_tokens(text: str, classes: bytes | None) -> list[str]:
    """The token regex's matches, by the fast path when the text is plain; ``classes`` is the
    text's class string when the caller has it (None: computed here)."""
    c = classes if classes is not None else char_classes(text)
    if c is not None and plain_classes(c):
        return text.translate(_SPACED).split()
    return _findall(text)


def case_forms(words: Iterable[str]) -> frozenset[str]:
    """``words`` (lower-case) as a text may write them: lower-case, capitalised and upper-case.
    A rule's trigger set: one set operation against a text's raw tokens rules the text out."""
    return frozenset(v for w in words for v in (w, w.capitalize(), w.upper()))


def skip_past(tokens: list[str], start: int, skip: frozenset[str]) -> int:
    """The first position from ``start`` on whose token is not in ``skip`` (``len(tokens)``
    when there is none): the word a determiner or a preposition leads to."""
    while start < len(tokens) and tokens[start] in skip:
        start += 1
    return start


def has_content(text: str) -> bool:
    """Whether ``text`` has a content token: ``bool(content_tokens(text))``, through the
    lexicon (a token's stem there is "" exactly when it is a stopword)."""
    return any(map(_lexicon().stem_of.__getitem__, tokenise(text)))


def content_tokens(text: str) -> list[str]:
    """Lower-cased stems of the non-stopword tokens of ``text``, in order."""
    return [stem(t) for t in (m.lower() for m in tokenise(text)) if t not in STOPWORDS]


class _Table(dict):
    """A table that learns a key on its first lookup (``__missing__``), so the hot
    loops can map a C-level ``__getitem__`` over the tokens of a text."""

    __slots__ = ("_learn",)

    def __init__(self, learn: Callable[[str], str]) -> None:
        super().__init__()
        self._learn = learn

    def __missing__(self, key: str) -> str:
        return self._learn(key)


class _Lexicon:
    """Everything learnt about raw tokens, each token classified once:

    - ``stem_of``: raw token -> stem ("" for a stopword);
    - ``token_key``: raw token -> match key of its stem ("" for a stopword);
    - ``key_of``: stem -> match key (first four characters);
    - ``number_of``: number tokens -> canonical number;
    - ``entity_of``: capitalised non-stopword tokens -> stem;
    - ``negations``: the raw tokens that are negations.

    The side tables are filled when ``stem_of`` learns a token, so a text's
    tokens must go through ``stem_of`` (or ``token_key``) of the same lexicon
    first. When the tables grow past a limit the module starts a fresh lexicon
    (:func:`_lexicon`); a profile keeps the lexicon it was built with.
    """

    __slots__ = ("stem_of", "token_key", "key_of", "number_of", "entity_of", "negations")

    def __init__(self) -> None:
        self.stem_of = _Table(self._learn_token)
        self.token_key = _Table(self._learn_token_key)
        self.key_of = _Table(self._learn_key)
        self.number_of: dict[str, str] = {}
        self.entity_of: dict[str, str] = {}
        self.negations: set[str] = set()

    def _learn_token(self, tok: str) -> str:
        low = tok.lower()
        nums = normalise_numbers([low])
        if low in STOPWORDS:
            st = ""
        elif nums and (low[0].isdigit() or low in CARDINALS or low in ORDINALS):
            # A number's stem is its value: "4", "four" and "1,500" match "4", "4" and "1500".
            st = next(iter(nums))
        else:
            st = stem(low)
        if nums:
            self.number_of[tok] = next(iter(nums))
        if low in NEGATIONS or low.endswith("n't"):
            self.negations.add(tok)
        if st and tok[0].isupper() and len(tok) > 1:
            self.entity_of[tok] = st
        self.stem_of[tok] = st
        return st

    def _learn_token_key(self, tok: str) -> str:
        st = self.stem_of[tok]
        key = self.key_of[st] if st else ""
        self.token_key[tok] = key
        return key

    def _learn_key(self, st: str) -> str:
        key = st if st[:1].isdigit() else st[:4]  # a number's key is all of it: 1500 is not 150000
        self.key_of[st] = key
        return key

    def size(self) -> int:
        return len(self.stem_of) + len(self.token_key) + len(self.key_of)


_LEXICON = _Lexicon()
_LEXICON_LIMIT = 1_500_000


def _lexicon() -> _Lexicon:
    """The current lexicon; a fresh one once the current one holds too many entries."""
    global _LEXICON
    lex = _LEXICON
    if lex.size() > _LEXICON_LIMIT:
        lex = _LEXICON = _Lexicon()
    return lex


class TextProfile:
    """Precomputed views of one text (a claim, a chunk sentence, a chunk), built
    once and reused for every pairwise comparison.

    ``stems`` (content stems in order), ``stem_set`` and ``keys`` (match keys of
    the stems: first four characters) are built at once; ``bigrams`` (stem
    bigrams), ``numbers`` (canonical), ``entities`` (stems of capitalised words,
    not text-initial) and ``negated`` on first use, since a chunk's profile is
    often compared on its stems alone.
    """

    __slots__ = (
        "stems",
        "stem_set",
        "keys",
        "_tokens",
        "_lex",
        "_bigrams",
        "_numbers",
        "_entities",
        "_negated",
    )

    def __init__(self, stems: list[str], keys: frozenset[str], tokens: list[str], lex: _Lexicon) -> None:
        self.stems = stems
        self.stem_set = frozenset(stems)
        self.keys = keys
        self._tokens = tokens
        self._lex = lex
        self._bigrams: frozenset[tuple[str, str]] | None = None
        self._numbers: frozenset[str] | None = None
        self._entities: frozenset[str] | None = None
        self._negated: bool | None = None

    @property
    def tokens(self) -> list[str]:
        """The raw tokens, in order."""
        return self._tokens

    @property
    def bigrams(self) -> frozenset[tuple[str, str]]:
        if self._bigrams is None:
            self._bigrams = frozenset(zip(self.stems, self.stems[1:], strict=False))
        return self._bigrams

    @property
    def numbers(self) -> frozenset[str]:
        if self._numbers is None:
            # The distinct tokens that are numbers (a C-level set intersection), then their values;
            # a number with a scale word is its value ("1.5 million": 1500000, not 1.5 and 1000000),
            # and a digit ordinal is one ("21st", not 21).
            number_of = self._lex.number_of
            tokens, values = self._tokens, frozenset()
            if not JOINING_FORMS.isdisjoint(tokens):
                scaled = joined_numbers(tokens)
                merged = {i - 1 for i, _ in scaled} | {i for i, _ in scaled}
                tokens = [t for i, t in enumerate(tokens) if i not in merged]
                values = frozenset(v for _, v in scaled)
            self._numbers = frozenset(map(number_of.__getitem__, number_of.keys() & set(tokens))) | values
        return self._numbers

    @property
    def entities(self) -> frozenset[str]:
        if self._entities is None:
            found = set(map(self._lex.entity_of.get, self._tokens[1:]))
            found.discard(None)
            self._entities = frozenset(found)  # type: ignore[arg-type]
        return self._entities

    @property
    def negated(self) -> bool:
        if self._negated is None:
            negations = self._lex.negations
            self._negated = not negations.isdisjoint(self._tokens) and _negates(self._tokens, negations)
        return self._negated


# Negation words that negate nothing in these turns: "not only X but also Y", "not just",
# "no later than March 1", "no fewer than 300", and "did not reopen until June" (it reopened).
_IDIOMS_AFTER: dict[str, frozenset[str]] = {
    "not": frozenset("only just merely simply".split()),
    "no": frozenset("later fewer less more sooner".split()),
}
_UNTIL = frozenset(("until", "till"))


def _negates(tokens: list[str], negations: set[str]) -> bool:
    """Whether a negation among ``tokens`` negates (it is no idiom of :data:`_IDIOMS_AFTER`,
    nor a "not ... until" within four words)."""
    for k, tok in enumerate(tokens):
        if tok not in negations:
            continue
        low = tok.lower()
        after = [t.lower() for t in tokens[k + 1 : k + 5]]
        if after and after[0] in _IDIOMS_AFTER.get(low, ()):
            continue
        if (low == "not" or low.endswith("n't")) and not _UNTIL.isdisjoint(after):
            continue
        return True
    return False


def profile(text: str) -> TextProfile:
    """Tokenise ``text`` once: content stems, stem bigrams, numbers, capitalised
    entities (not text-initial), and whether it contains a negation. A number written with
    a scale word is one stem and one number, its value ("1.5 million" -> ``1500000``)."""
    return profile_tokens(tokenise(text))


def profile_tokens(tokens: list[str]) -> TextProfile:
    """:func:`profile` of already tokenised text (:func:`tokenise`)."""
    lex = _lexicon()
    stems = content_stems(tokens, lex)
    return TextProfile(stems, frozenset(map(lex.key_of.__getitem__, stems)), tokens, lex)


def content_stems(tokens: list[str], lex: _Lexicon) -> list[str]:
    """The content stems of ``tokens`` in order, a number with a scale word as one stem, its
    value (:func:`joined_numbers`), and so is a digit ordinal ("21st")."""
    if JOINING_FORMS.isdisjoint(tokens):
        return list(filter(None, map(lex.stem_of.__getitem__, tokens)))
    scaled = dict(joined_numbers(tokens))
    out = []
    for i, tok in enumerate(tokens):
        if i + 1 in scaled:
            continue  # the number before a scale word or suffix: the second token holds the value
        st = scaled.get(i) or lex.stem_of[tok]
        if st:
            out.append(st)
    return out


def stem_set(tokens: list[str]) -> frozenset[str]:
    """The content stems of already tokenised text."""
    return frozenset(filter(None, map(_lexicon().stem_of.__getitem__, tokens)))


def profile_sentences(
    sentence_tokens: list[list[str]],
) -> tuple[list[list[str]], list[frozenset[str]], TextProfile]:
    """For the tokens of consecutive sentences (:func:`tokenise`): each sentence's content
    stems (in order) and match keys, and the full profile of their concatenation. Each
    token is looked up once (its stem); only content stems are looked up for keys."""
    lex = _lexicon()
    key_of = lex.key_of.__getitem__
    sentence_stems = [content_stems(toks, lex) for toks in sentence_tokens]
    key_sets = [frozenset(map(key_of, stems)) for stems in sentence_stems]
    tokens = list(chain.from_iterable(sentence_tokens))
    stems = list(chain.from_iterable(sentence_stems))
    return sentence_stems, key_sets, TextProfile(stems, frozenset().union(*key_sets), tokens, lex)
