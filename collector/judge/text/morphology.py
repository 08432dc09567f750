"""Word forms the suffix stripper of :mod:`.tokens` cannot relate on its own.

Stems are compared by their first four characters, so most derivations already meet
(``describe``/``description``, ``admit``/``admission``). What does not: irregular verbs
whose past forms change the stem (``held``/``hold``, ``wrote``/``write``) and the
``-tain``/``-tention`` alternation with a short prefix (``retained``/``retention``,
``detain``/``detention``), which differ inside the first four characters. Both are mapped
to one form before truncation.
"""

from __future__ import annotations

__all__ = ["IRREGULAR", "base_form", "derive"]

#: Irregular inflections -> base form (only those that differ within the first four letters).
IRREGULAR: dict[str, str] = {
    form: base
    for base, forms in {
        "hold": "held",
        "keep": "kept",
        "write": "wrote written",
        "take": "took",
        "give": "gave",
        "know": "knew",
        "grow": "grew",
        "lead": "led",
        "leave": "left",
        "meet": "met",
        "sell": "sold",
        "tell": "told",
        "think": "thought",
        "bring": "brought",
        "buy": "bought",
        "teach": "taught",
        "catch": "caught",
        "seek": "sought",
        "fight": "fought",
        "win": "won",
        "begin": "began begun",
        "speak": "spoke spoken",
        "break": "broke broken",
        "choose": "chose chosen",
        "lose": "lost",
        "run": "ran",
        "sing": "sang sung",
        "drive": "drove",
        "ride": "rode",
        "rise": "rose",
        "fly": "flew flown",
        "draw": "drew drawn",
        "throw": "threw thrown",
        "fall": "fell",
        "feel": "felt",
        "bear": "bore",
        "swear": "swore sworn",
        "wear": "wore worn",
        "tear": "tore torn",
        "steal": "stole stolen",
        "freeze": "froze frozen",
        "forget": "forgot forgotten",
        "get": "got gotten",
        "send": "sent",
        "spend": "spent",
        "build": "built",
        "pay": "paid",
        "say": "said",
        "make": "made",
        "come": "came",
        "become": "became",
        "go": "went gone",
        "do": "did done",
        "see": "saw seen",
        "eat": "ate eaten",
        "stand": "stood",
        "understand": "understood",
        "die": "died death dead",
    }.items()
    for form in forms.split()
}

# Short-prefix verbs in -tain whose nouns are -tention/-tentive (the prefix is two letters,
# so the alternation falls inside the four-character match key).
_TAIN_PREFIXES = ("re", "de", "ob", "at")


def base_form(word: str) -> str:
    """The base form of an irregular inflection (``held`` -> ``hold``), else ``word``."""
    return IRREGULAR.get(word, word)


def derive(stem: str) -> str:
    """Map a suffix-stripped stem onto its derivation family's shared spelling
    (``retain``/``retent`` -> ``retent``)."""
    if stem.endswith("tain") and len(stem) == 6 and stem.startswith(_TAIN_PREFIXES):
        return stem[:2] + "tent"
    return stem
