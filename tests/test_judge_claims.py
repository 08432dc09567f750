"""Claim extraction and citation markers.

Most cases are rows of two tables, one test each: the claim texts an answer yields, and the claims
with the chunk ids their markers cite; a comment above each group of rows names the rule it checks."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge.local.claims import extract_claims, find_markers, is_abstention, normalise_claim

IDS = ["C1", "C2", "doc-7"]
TATTOO = ["The tattoo heals in three weeks."]
COUNCIL = ["The council closed the library in March."]
LOGS = ["Logs are kept for five years."]
C123 = ["C1", "C2", "C3"]
LOGS_AND_BACKUPS = [("Logs are kept for five years.", ["C1"]), ("Backups are encrypted.", ["C2"])]


def _texts(answer: str) -> list[str]:
    return [c.text for c in extract_claims(answer, IDS).claims]


def _cited(answer: str, ids: list[str]) -> list[tuple[str, list[str]]]:
    """(text, cited chunk ids) of each claim of ``answer``."""
    return [(c.text, c.citations) for c in extract_claims(answer, ids).claims]


def test_marker_forms_resolve_to_chunk_ids() -> None:
    ans = "A [1]. B [C2]. C [doc-7]. D [1, 3]. E [1][2]. F [citation needed]. G [9]."
    got = [(m.text, m.doc_ids) for m in find_markers(ans, IDS)]
    assert got == [
        ("[1]", ["C1"]),
        ("[C2]", ["C2"]),
        ("[doc-7]", ["doc-7"]),
        ("[1, 3]", ["C1", "doc-7"]),
        ("[1]", ["C1"]),
        ("[2]", ["C2"]),
        ("[9]", ["9"]),  # out of range: kept as an id that no chunk has (an invalid citation)
    ]


def test_chunks_named_by_position_are_citation_markers() -> None:
    assert [m.text for m in find_markers("A [1] and (passage 2) and [doc-7].", IDS)] == [
        "[1]",
        "(passage 2)",
        "[doc-7]",
    ]


@pytest.mark.parametrize(
    ("answer", "ids", "claims"),
    [
        # markers attach to the claim they follow
        (
            "Logs are kept for 5 years [1]. [2] Deletion needs approval [1][3].",
            IDS,
            [("Logs are kept for 5 years.", ["C1", "C2"]), ("Deletion needs approval.", ["C1", "doc-7"])],
        ),
        # list numbers are not sentences and markdown is not read
        (
            "## Retention\n\n"
            "1. **Audit logs**: Logs are kept for five years [1].\n"
            "2. Deletion needs `approval` from the records officer [2].\n\n"
            "**Summary**\n\n"
            "10. Backups run nightly.",
            IDS,
            [
                ("Audit logs: Logs are kept for five years.", ["C1"]),
                ("Deletion needs approval from the records officer.", ["C2"]),
                ("Backups run nightly.", []),
            ],
        ),
        # a list number on a line of its own is no claim: "2." alone is the marker of the item on
        # the next line, not a claim to judge (it was one, unsupported, and made a faithful answer
        # hallucinated); a number that ends a sentence still belongs to it
        (
            "1. Common side effects: nausea [1].\n2.\nRisks with long-term use: ulcers [2].\nThe fee is 5.",
            IDS,
            [
                ("Common side effects: nausea.", ["C1"]),
                ("Risks with long-term use: ulcers.", ["C2"]),
                ("The fee is 5.", []),
            ],
        ),
        # markers after a stop run together
        (
            "Logs are kept for five years.[1][3] Backups are encrypted.",
            C123,
            [("Logs are kept for five years.", ["C1", "C3"]), ("Backups are encrypted.", [])],
        ),
        # chunks named by position are citation markers
        (
            "The tattoo heals in three weeks [Passage 1]. Deeper layers take six months (passages 2 and 3). "
            "It may ooze (Source: document 2). It itches (passages 1-3). The cost rose (2019).",
            ["P1", "P2", "P3"],
            [
                ("The tattoo heals in three weeks.", ["P1"]),
                ("Deeper layers take six months.", ["P2", "P3"]),
                ("It may ooze.", ["P2"]),
                ("It itches.", ["P1", "P2", "P3"]),
                ("The cost rose (2019).", []),
            ],
        ),
        (
            "It heals (source 1, source 3). It itches (see passage 2). It fades [see also documents 1 and 2].",
            ["P1", "P2", "P3"],
            [("It heals.", ["P1", "P3"]), ("It itches.", ["P2"]), ("It fades.", ["P1", "P2"])],
        ),
        # a source named after a clause is its citation; a clause with a subject of its own
        # borrows no head
        (
            "The tattoo heals in three weeks, as mentioned in passage 1. Deeper layers take six months, "
            "according to passage 2, and they itch.",
            ["P1", "P2"],
            [
                ("The tattoo heals in three weeks.", ["P1"]),
                ("Deeper layers take six months.", ["P2"]),
                ("They itch.", []),
            ],
        ),
        # citation formats of chat products and markdown
        (
            "Logs are kept for five years【1†source】. Backups are encrypted【2†policy.pdf】.",
            C123,
            LOGS_AND_BACKUPS,
        ),
        (
            "Logs are kept for five years【4:0†source】. Backups are encrypted【4:1†source】.",
            C123,
            LOGS_AND_BACKUPS,
        ),
        ("Logs are kept for five years[^1]. Backups are encrypted[^2].", C123, LOGS_AND_BACKUPS),
        (
            "Logs are kept for five years<sup>1</sup>. Backups are encrypted<sup>[2]</sup>.",
            C123,
            LOGS_AND_BACKUPS,
        ),
        ("Logs are kept for five years\u00b9. Backups are encrypted\u00b2.", C123, LOGS_AND_BACKUPS),
        ("Logs are kept for five years [[1]]. Backups are encrypted [[2]].", C123, LOGS_AND_BACKUPS),
        (
            "Logs are kept for five years [source: 1]. Backups are encrypted [source: 2].",
            C123,
            LOGS_AND_BACKUPS,
        ),
        # after the full stop, as Wikipedia and answer engines cite
        ("Logs are kept for five years.[1] Backups are encrypted.[2]", C123, LOGS_AND_BACKUPS),
        (
            "Logs are kept for five years.\u30101\u2020source\u3011 Backups are encrypted.\u30102\u2020source\u3011",
            C123,
            LOGS_AND_BACKUPS,
        ),
    ],
)
def test_claims_carry_the_chunks_their_markers_cite(
    answer: str, ids: list[str], claims: list[tuple[str, list[str]]]
) -> None:
    assert _cited(answer, ids) == claims


def test_subjectless_fragment_after_a_marker_borrows_the_head() -> None:
    assert _cited("Access requires a ticket [1] and approval from the owner [2].", IDS) == [
        ("Access requires a ticket.", ["C1"]),
        ("Access requires approval from the owner.", ["C2"]),
    ]
    claims = extract_claims("The rule requires a ticket [1] and permits early deletion [2].", IDS).claims
    assert claims[1].text == "The rule permits early deletion."


@pytest.mark.parametrize(
    "sentence",
    [
        # a list of subjects: the last item before "and" has no verb of its own
        "Regular vet visits, good nutrition and spaying or neutering can all help a cat live longer.",
        # an apposition after the tail's first word: "and" joins two names
        "It was chosen because Sydney and Melbourne, the two largest cities, both wanted the title.",
        # the tail's only verb-like word ends it: "eggs" is a noun
        "Store-bought dough is safe, since it is made with heat-treated flour and no raw eggs.",
        # a list after a colon
        "The app works offline: maps and timetables can be downloaded in advance.",
        # two verbs of one subject
        "In children it can cause rickets, which softens and bends the bones.",
    ],
)
def test_and_inside_a_clause_is_not_a_clause_boundary(sentence: str) -> None:
    assert _texts(sentence) == [sentence]


@pytest.mark.parametrize(
    ("answer", "claims"),
    [
        # compound sentences split into clauses
        (
            "Logs are retained for five years and earlier deletion requires a legal hold release. "
            "Backups are encrypted, but restores are tested quarterly.",
            [
                "Logs are retained for five years.",
                "Earlier deletion requires a legal hold release.",
                "Backups are encrypted.",
                "Restores are tested quarterly.",
            ],
        ),
        # noun coordination is not split
        ("Salt and pepper are used in most kitchens.", ["Salt and pepper are used in most kitchens."]),
        # "and" between clauses still splits
        (
            "The colour depends on the gas: oxygen gives off green and red light, and nitrogen produces "
            "blue and purple. The office is in Paris and the archive is kept in Frankfurt.",
            [
                "The colour depends on the gas: oxygen gives off green and red light.",
                "Nitrogen produces blue and purple.",
                "The office is in Paris.",
                "The archive is kept in Frankfurt.",
            ],
        ),
        # a clause with its own subject borrows no head: "crocodiles" ends in -s like the head's
        # verb "is", but "have" after it is its own verb
        (
            "The way to tell them apart is the snout: alligators have a broad snout, whereas crocodiles "
            "have a narrower one.",
            [
                "The way to tell them apart is the snout: alligators have a broad snout.",
                "Crocodiles have a narrower one.",
            ],
        ),
        # "and" in a paired phrase or before a shared subject's verb: "between X and Y" joins nouns;
        # a tail whose verb follows another "and" has no subject of its own; a borrowed head skips a
        # relative clause; an irregular past borrows the head
        (
            "Basements were flooded, rail services between Galway and Athenry were suspended, "
            "and a man was treated in hospital.",
            [
                "Basements were flooded, rail services between Galway and Athenry were suspended.",
                "A man was treated in hospital.",
            ],
        ),
        (
            "Both adults and children were screened at the clinic.",
            ["Both adults and children were screened at the clinic."],
        ),
        (
            "The deal, which the family has agreed to support, still requires shareholder and regulatory "
            "approval and is expected to close next year.",
            [
                "The deal, which the family has agreed to support, still requires shareholder and regulatory approval.",
                "The deal, which the family has agreed to support, still is expected to close next year.",
            ],
        ),
        (
            "The chief executive expects $45 million in savings and said there are no plans for layoffs.",
            [
                "The chief executive expects $45 million in savings.",
                "The chief executive said there are no plans for layoffs.",
            ],
        ),
        # abbreviations do not end sentences
        (
            "Dr. Smith approved the U.S. plan, e.g. for banks. It took 3.5 days.",
            ["Dr. Smith approved the U.S. plan, e.g. for banks.", "It took 3.5 days."],
        ),
        # a list introduction frames its items: fragments are read with the introduction, the
        # introduction is no claim of its own
        (
            "Common triggers include:\n- eating a large meal\n- sudden excitement\n\nThey pass.",
            [
                "Common triggers include: eating a large meal.",
                "Common triggers include: sudden excitement.",
                "They pass.",
            ],
        ),
        # items that are sentences stand alone
        (
            "There are two steps:\n1. Preheat the oven to 180 degrees.\n2. Bake it for 20 minutes.",
            ["Preheat the oven to 180 degrees.", "Bake it for 20 minutes."],
        ),
        # an introduction that cites a chunk stays; a colon without items is an ordinary claim
        (
            "Logs are kept for five years [1]:\n- audit logs",
            ["Logs are kept for five years.", "Logs are kept for five years: audit logs."],
        ),
        ("Logs are kept for five years:", LOGS),
        # tables and answer labels are formatting: no header row, no rule
        (
            "| Service | Time |\n| :--- | ---: |\n| Routine | 4-6 weeks |\n| Expedited | 2-3 weeks |",
            ["Routine 4-6 weeks.", "Expedited 2-3 weeks."],
        ),
        ("Answer: Routine service takes six weeks.", ["Routine service takes six weeks."]),
        ("Q: How long?\nA: Routine service takes six weeks.", ["Routine service takes six weeks."]),
        ("Note: fees may change.", ["Fees may change."]),
        # links and a sources section are not claims
        (
            "Logs are kept for five years [1]. See the [retention policy](https://example.org/policy) "
            "or https://example.org/faq for details.\n\nSources:\n[1] Records policy, https://example.org/policy\n"
            "- [FAQ](https://example.org/faq)\n\nBackups are encrypted.",
            [
                "Logs are kept for five years.",
                "See the retention policy or for details.",
                "Backups are encrypted.",
            ],
        ),
        # source lines are not claims and a meta opening leaves its fact
        (
            "Here is the answer: the tattoo heals in three weeks.\n"
            "Source: passage 2\n\nReferences: [1], [2]\n\nSources:\n- Passage 1\n- Passage 2",
            TATTOO,
        ),
        # sentences about sources that say something stay claims
        ("Documents 1 and 2 were signed in 1990.", ["Documents 1 and 2 were signed in 1990."]),
        ("The source of the river is in the Alps.", ["The source of the river is in the Alps."]),
        ("The fee is listed (see Figure 2).", ["The fee is listed (see Figure 2)."]),
        # greetings, closers and hedges are not claims
        ("Hello! Based on the provided sources, logs are kept for five years [1]. I hope this helps!", LOGS),
        # courtesy and sentences about the question are not claims
        ("Logs are kept for five years. I'm happy to help!", LOGS),
        ("Logs are kept for five years. I'd be glad to help with that.", LOGS),
        ("Logs are kept for five years. I am glad to assist you.", LOGS),
        ("Logs are kept for five years. If you have any further questions, please let me know.", LOGS),
        ("Logs are kept for five years. If you have any questions, feel free to ask.", LOGS),
        ("Logs are kept for five years. The question is asking about the retention period.", LOGS),
        ("Logs are kept for five years. The user wants to know how long logs are kept.", LOGS),
        # an opening greeting or answer particle keeps the claim after it
        ("Sure, the tattoo heals in three weeks.", TATTOO),
        ("Certainly! The tattoo heals in three weeks.", TATTOO),
        ("Of course, the tattoo heals in three weeks.", TATTOO),
        ("Sure thing, the tattoo heals in three weeks.", TATTOO),
        ("Yes, the tattoo heals in three weeks.", TATTOO),
        ("No, the tattoo heals in three weeks.", TATTOO),  # answers the question: the claim is not negated
        ("No. The tattoo heals in three weeks.", TATTOO),
        ("Sure! Here is the answer.", []),
        ("Yes!", []),
        ("No.", []),
        ("Sure, I hope this helps.", []),
        ("Hello there, welcome.", []),
        # source prefixes are stripped and meta sentences behind them dropped
        (
            "Based on the passages provided, the median wage was $77,090 in May 2020.",
            ["The median wage was $77,090 in May 2020."],
        ),
        (
            "According to the information provided in the passages, Canberra is the capital.",
            ["Canberra is the capital."],
        ),
        (
            "According to Passage 2, water boils at 194 degrees at 10,000 feet.",
            ["Water boils at 194 degrees at 10,000 feet."],
        ),
        (
            "The passages state that water boils at 100 degrees at sea level.",
            ["Water boils at 100 degrees at sea level."],
        ),
        ("Based on the given passages, here are the main causes of hiccups:", []),
        # a named source is part of what the claim says; "in the context of" is no source
        (
            "According to the International Trade Centre, output is 20,000 tons.",
            ["According to the International Trade Centre, output is 20,000 tons."],
        ),
        (
            "In the context of cooking, water boils faster at altitude.",
            ["In the context of cooking, water boils faster at altitude."],
        ),
        # a named authority is no chunk: it stays in the claim
        ("Per the IRS, the fee is 50 dollars.", ["Per the IRS, the fee is 50 dollars."]),
        # framing phrases of LLM answers are stripped
        ("According to passages 1 and 2, the tattoo heals in three weeks.", TATTOO),
        ("Passage 2 also mentions that the tattoo heals in three weeks.", TATTOO),
        ("It is important to note that the tattoo heals in three weeks.", TATTOO),
        ("It's worth noting that the tattoo heals in three weeks.", TATTOO),
        ("Please note that the tattoo heals in three weeks.", TATTOO),
        ("In conclusion, the tattoo heals in three weeks.", TATTOO),
        ("The answer to your question is that the tattoo heals in three weeks.", TATTOO),
        ("To answer your question, the tattoo heals in three weeks.", TATTOO),
        ("From the passages provided, it can be inferred that the tattoo heals in three weeks.", TATTOO),
        ("It is mentioned in the passages that the tattoo heals in three weeks.", TATTOO),
        ("The first passage explains that the tattoo heals in three weeks.", TATTOO),
        ('The answer to the question "how long does it take" is: the tattoo heals in three weeks.', TATTOO),
        # a summary's framing of its source is stripped
        ("The article reports that the council closed the library in March.", COUNCIL),
        ("The news article highlights that the council closed the library in March.", COUNCIL),
        ("The passage describes how the council closed the library in March.", COUNCIL),
        ("The author explains that the council closed the library in March.", COUNCIL),
        ("The story mainly focuses on how the council closed the library in March.", COUNCIL),
        ("The text talks about how the council closed the library in March.", COUNCIL),
        ("Therefore, the council closed the library in March.", COUNCIL),
        ("I would say that the council closed the library in March.", COUNCIL),
        ("From what I can tell, the council closed the library in March.", COUNCIL),
        ("I should note that the council closed the library in March.", COUNCIL),
        ("From the given context, we can infer that the council closed the library in March.", COUNCIL),
        ("It can be seen from the passages that the council closed the library in March.", COUNCIL),
        ("Passage 1 and passage 3 both mention that the council closed the library in March.", COUNCIL),
        ("Both passages agree that the council closed the library in March.", COUNCIL),
        ("Based on my analysis of the passages, the council closed the library in March.", COUNCIL),
        ("Based on the provided JSON data, the council closed the library in March.", COUNCIL),
        ("According to the reviews, the council closed the library in March.", COUNCIL),
        ("This article is about the library's closure.", ["The library's closure."]),
        # "about" before a number or "to" is the claim's own word, not the frame's
        ("The author is about 50 years old.", ["The author is about 50 years old."]),
        ("The report was published in 2019.", ["The report was published in 2019."]),
        ("Reviews are mixed.", ["Reviews are mixed."]),
    ],
)
def test_an_answer_yields_these_claims(answer: str, claims: list[str]) -> None:
    assert _texts(answer) == claims


def test_abstention_statements() -> None:
    for text in (
        "The available sources do not establish the rule.",
        "I cannot find this in the retrieved policies.",
        "There is not enough information to answer.",
        "The retention period is not specified in the documents.",
    ):
        assert is_abstention(text), text
        assert extract_claims(text, IDS).abstained
    partial = extract_claims("Logs are kept for five years. The sources do not mention deletion.", IDS)
    assert not partial.abstained
    assert [c.text for c in partial.claims] == ["Logs are kept for five years."]
    assert not is_abstention("Logs are kept for five years.")


def test_normalise_claim_strips_markers_and_list_bullets() -> None:
    assert normalise_claim("1. Choose a location [3]") == "Choose a location"
    assert normalise_claim("• Ask questions [2][4].") == "Ask questions."
