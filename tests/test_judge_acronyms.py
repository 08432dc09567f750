"""Acronyms in claims read as the names the chunks spell out."""

from __future__ import annotations

from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.text.acronyms import expand_acronyms, is_acronym
from ragpulse.collector.judge.text.tokens import tokenise

from tests.judge_records import judged_claims

CHUNK = (
    "Barack Obama signed the Affordable Care Act in March 2010. The National Aeronautics and Space "
    "Administration was founded in 1958. The Centers for Disease Control and Prevention tracks flu. "
    "The Village is a drama. He served in World War II."
)
CHUNKS = build_evidence([{"id": "C1", "content": CHUNK}])


def _expanded(claim: str) -> str | None:
    out = expand_acronyms(tokenise(claim), CHUNKS)
    return " ".join(out) if out is not None else None


def test_an_acronym_reads_as_the_name_whose_initials_spell_it() -> None:
    assert _expanded("Obama signed the ACA in 2010") == "Obama signed the Affordable Care Act in 2010"
    assert (
        _expanded("NASA was founded in 1958")
        == "National Aeronautics and Space Administration was founded in 1958"
    )
    assert _expanded("The CDC tracks flu") == "The Centers for Disease Control tracks flu"


def test_what_is_no_acronym_or_no_name_is_left_alone() -> None:
    assert _expanded("He served in World War II") is None  # a Roman numeral
    assert _expanded("The TV drama aired") is None  # two letters meet names by chance
    assert _expanded("The TVD drama aired") is None  # "The Village Drama": "The" opens a sentence
    assert _expanded("The FBI tracks flu") is None  # no name spells it
    assert not is_acronym("USA's") and not is_acronym("Obama") and is_acronym("NATO")


def test_an_acronym_the_chunks_use_is_kept() -> None:
    chunks = build_evidence([{"id": "C1", "content": "The Affordable Care Act (ACA) passed in 2010."}])
    assert expand_acronyms(tokenise("The ACA passed in 2010"), chunks) is None


def test_a_claim_naming_the_source_by_its_acronym_is_supported() -> None:
    assert (
        judged_claims(get_judge("local"), "Obama signed the ACA in 2010.", CHUNK)[0]["verdict"] == "supported"
    )
