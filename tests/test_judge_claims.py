"""Claim extraction and citation markers."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge.local.claims import extract_claims, find_markers, is_abstention, normalise_claim

IDS = ["C1", "C2", "doc-7"]


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


def test_markers_attach_to_the_claim_they_follow() -> None:
    ans = "Logs are kept for 5 years [1]. [2] Deletion needs approval [1][3]."
    claims = extract_claims(ans, IDS).claims
    assert [(c.text, c.citations) for c in claims] == [
        ("Logs are kept for 5 years.", ["C1", "C2"]),
        ("Deletion needs approval.", ["C1", "doc-7"]),
    ]


def test_compound_sentences_split_into_clauses() -> None:
    claims = extract_claims(
        "Logs are retained for five years and earlier deletion requires a legal hold release. "
        "Backups are encrypted, but restores are tested quarterly.",
        IDS,
    ).claims
    assert [c.text for c in claims] == [
        "Logs are retained for five years.",
        "Earlier deletion requires a legal hold release.",
        "Backups are encrypted.",
        "Restores are tested quarterly.",
    ]


def test_noun_coordination_is_not_split() -> None:
    claims = extract_claims("Salt and pepper are used in most kitchens.", IDS).claims
    assert [c.text for c in claims] == ["Salt and pepper are used in most kitchens."]


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
    assert [c.text for c in extract_claims(sentence, IDS).claims] == [sentence]


def test_and_between_clauses_still_splits() -> None:
    claims = extract_claims(
        "The colour depends on the gas: oxygen gives off green and red light, and nitrogen produces "
        "blue and purple. The office is in Paris and the archive is kept in Frankfurt.",
        IDS,
    ).claims
    assert [c.text for c in claims] == [
        "The colour depends on the gas: oxygen gives off green and red light.",
        "Nitrogen produces blue and purple.",
        "The office is in Paris.",
        "The archive is kept in Frankfurt.",
    ]


def test_a_clause_with_its_own_subject_borrows_no_head() -> None:
    # "crocodiles" ends in -s like the head's verb "is", but "have" after it is its own verb
    claims = extract_claims(
        "The way to tell them apart is the snout: alligators have a broad snout, whereas crocodiles "
        "have a narrower one.",
        IDS,
    ).claims
    assert [c.text for c in claims] == [
        "The way to tell them apart is the snout: alligators have a broad snout.",
        "Crocodiles have a narrower one.",
    ]


def test_subjectless_fragment_after_a_marker_borrows_the_head() -> None:
    claims = extract_claims("Access requires a ticket [1] and approval from the owner [2].", IDS).claims
    assert [(c.text, c.citations) for c in claims] == [
        ("Access requires a ticket.", ["C1"]),
        ("Access requires approval from the owner.", ["C2"]),
    ]
    claims = extract_claims("The rule requires a ticket [1] and permits early deletion [2].", IDS).claims
    assert claims[1].text == "The rule permits early deletion."


def test_greetings_closers_and_hedges_are_not_claims() -> None:
    claims = extract_claims(
        "Hello! Based on the provided sources, logs are kept for five years [1]. I hope this helps!", IDS
    ).claims
    assert [c.text for c in claims] == ["Logs are kept for five years."]


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


def test_abbreviations_do_not_end_sentences() -> None:
    claims = extract_claims("Dr. Smith approved the U.S. plan, e.g. for banks. It took 3.5 days.", IDS).claims
    assert [c.text for c in claims] == [
        "Dr. Smith approved the U.S. plan, e.g. for banks.",
        "It took 3.5 days.",
    ]


def test_normalise_claim_strips_markers_and_list_bullets() -> None:
    assert normalise_claim("1. Choose a location [3]") == "Choose a location"
    assert normalise_claim("• Ask questions [2][4].") == "Ask questions."


def _texts(answer: str) -> list[str]:
    return [c.text for c in extract_claims(answer, IDS).claims]


def test_list_numbers_are_not_sentences_and_markdown_is_not_read() -> None:
    answer = (
        "## Retention\n\n"
        "1. **Audit logs**: Logs are kept for five years [1].\n"
        "2. Deletion needs `approval` from the records officer [2].\n\n"
        "**Summary**\n\n"
        "10. Backups run nightly."
    )
    claims = extract_claims(answer, IDS).claims
    assert [(c.text, c.citations) for c in claims] == [
        ("Audit logs: Logs are kept for five years.", ["C1"]),
        ("Deletion needs approval from the records officer.", ["C2"]),
        ("Backups run nightly.", []),
    ]


def test_a_list_number_on_a_line_of_its_own_is_no_claim() -> None:
    # "2." alone is the marker of the item on the next line, not a claim to judge (it was
    # one, unsupported, and made a faithful answer hallucinated); a number that ends a
    # sentence still belongs to it.
    answer = "1. Common side effects: nausea [1].\n2.\nRisks with long-term use: ulcers [2].\nThe fee is 5."
    claims = extract_claims(answer, IDS).claims
    assert [(c.text, c.citations) for c in claims] == [
        ("Common side effects: nausea.", ["C1"]),
        ("Risks with long-term use: ulcers.", ["C2"]),
        ("The fee is 5.", []),
    ]


def test_source_prefixes_are_stripped_and_meta_sentences_behind_them_dropped() -> None:
    assert _texts("Based on the passages provided, the median wage was $77,090 in May 2020.") == [
        "The median wage was $77,090 in May 2020."
    ]
    assert _texts("According to the information provided in the passages, Canberra is the capital.") == [
        "Canberra is the capital."
    ]
    assert _texts("According to Passage 2, water boils at 194 degrees at 10,000 feet.") == [
        "Water boils at 194 degrees at 10,000 feet."
    ]
    assert _texts("The passages state that water boils at 100 degrees at sea level.") == [
        "Water boils at 100 degrees at sea level."
    ]
    assert _texts("Based on the given passages, here are the main causes of hiccups:") == []
    # A named source is part of what the claim says; "in the context of" is no source.
    assert _texts("According to the International Trade Centre, output is 20,000 tons.") == [
        "According to the International Trade Centre, output is 20,000 tons."
    ]
    assert _texts("In the context of cooking, water boils faster at altitude.") == [
        "In the context of cooking, water boils faster at altitude."
    ]


def test_a_list_introduction_frames_its_items() -> None:
    # Fragments are read with the introduction; the introduction is no claim of its own.
    assert _texts("Common triggers include:\n- eating a large meal\n- sudden excitement\n\nThey pass.") == [
        "Common triggers include: eating a large meal.",
        "Common triggers include: sudden excitement.",
        "They pass.",
    ]
    # Items that are sentences stand alone.
    assert _texts(
        "There are two steps:\n1. Preheat the oven to 180 degrees.\n2. Bake it for 20 minutes."
    ) == [
        "Preheat the oven to 180 degrees.",
        "Bake it for 20 minutes.",
    ]
    # An introduction that cites a chunk stays; a colon without items is an ordinary claim.
    assert _texts("Logs are kept for five years [1]:\n- audit logs") == [
        "Logs are kept for five years.",
        "Logs are kept for five years: audit logs.",
    ]
    assert _texts("Logs are kept for five years:") == ["Logs are kept for five years."]


def test_chunks_named_by_position_are_citation_markers() -> None:
    ids = ["P1", "P2", "P3"]
    answer = (
        "The tattoo heals in three weeks [Passage 1]. Deeper layers take six months (passages 2 and 3). "
        "It may ooze (Source: document 2). It itches (passages 1-3). The cost rose (2019)."
    )
    claims = extract_claims(answer, ids).claims
    assert [(c.text, c.citations) for c in claims] == [
        ("The tattoo heals in three weeks.", ["P1"]),
        ("Deeper layers take six months.", ["P2", "P3"]),
        ("It may ooze.", ["P2"]),
        ("It itches.", ["P1", "P2", "P3"]),
        ("The cost rose (2019).", []),
    ]
    listed = (
        "It heals (source 1, source 3). It itches (see passage 2). It fades [see also documents 1 and 2]."
    )
    assert [(c.text, c.citations) for c in extract_claims(listed, ids).claims] == [
        ("It heals.", ["P1", "P3"]),
        ("It itches.", ["P2"]),
        ("It fades.", ["P1", "P2"]),
    ]
    assert _texts("The fee is listed (see Figure 2).") == ["The fee is listed (see Figure 2)."]
    assert [m.text for m in find_markers("A [1] and (passage 2) and [doc-7].", IDS)] == [
        "[1]",
        "(passage 2)",
        "[doc-7]",
    ]


def test_framing_phrases_of_llm_answers_are_stripped() -> None:
    for framed in (
        "According to passages 1 and 2, the tattoo heals in three weeks.",
        "Passage 2 also mentions that the tattoo heals in three weeks.",
        "It is important to note that the tattoo heals in three weeks.",
        "It's worth noting that the tattoo heals in three weeks.",
        "Please note that the tattoo heals in three weeks.",
        "In conclusion, the tattoo heals in three weeks.",
        "The answer to your question is that the tattoo heals in three weeks.",
        "To answer your question, the tattoo heals in three weeks.",
        "From the passages provided, it can be inferred that the tattoo heals in three weeks.",
        "It is mentioned in the passages that the tattoo heals in three weeks.",
        "The first passage explains that the tattoo heals in three weeks.",
        'The answer to the question "how long does it take" is: the tattoo heals in three weeks.',
    ):
        assert _texts(framed) == ["The tattoo heals in three weeks."], framed


def test_tables_and_answer_labels_are_formatting() -> None:
    table = "| Service | Time |\n| :--- | ---: |\n| Routine | 4-6 weeks |\n| Expedited | 2-3 weeks |"
    assert _texts(table) == ["Routine 4-6 weeks.", "Expedited 2-3 weeks."]  # no header row, no rule
    assert _texts("Answer: Routine service takes six weeks.") == ["Routine service takes six weeks."]
    assert _texts("Q: How long?\nA: Routine service takes six weeks.") == ["Routine service takes six weeks."]
    assert _texts("Note: fees may change.") == ["Fees may change."]


def test_a_source_named_after_a_clause_is_its_citation() -> None:
    claims = extract_claims(
        "The tattoo heals in three weeks, as mentioned in passage 1. Deeper layers take six months, "
        "according to passage 2, and they itch.",
        ["P1", "P2"],
    ).claims
    assert [(c.text, c.citations) for c in claims] == [
        ("The tattoo heals in three weeks.", ["P1"]),
        ("Deeper layers take six months.", ["P2"]),
        ("They itch.", []),  # a clause with a subject of its own borrows no head
    ]
    # A named authority is no chunk: it stays in the claim.
    assert _texts("Per the IRS, the fee is 50 dollars.") == ["Per the IRS, the fee is 50 dollars."]


def test_an_opening_greeting_or_answer_particle_keeps_the_claim_after_it() -> None:
    for opened in (
        "Sure, the tattoo heals in three weeks.",
        "Certainly! The tattoo heals in three weeks.",
        "Of course, the tattoo heals in three weeks.",
        "Sure thing, the tattoo heals in three weeks.",
        "Yes, the tattoo heals in three weeks.",
        "No, the tattoo heals in three weeks.",  # answers the question: the claim is not negated
        "No. The tattoo heals in three weeks.",
    ):
        assert _texts(opened) == ["The tattoo heals in three weeks."], opened
    for nothing in (
        "Sure! Here is the answer.",
        "Yes!",
        "No.",
        "Sure, I hope this helps.",
        "Hello there, welcome.",
    ):
        assert _texts(nothing) == [], nothing


def test_source_lines_are_not_claims_and_a_meta_opening_leaves_its_fact() -> None:
    answer = (
        "Here is the answer: the tattoo heals in three weeks.\n"
        "Source: passage 2\n\nReferences: [1], [2]\n\nSources:\n- Passage 1\n- Passage 2"
    )
    assert _texts(answer) == ["The tattoo heals in three weeks."]
    # Sentences about sources that say something stay claims.
    assert _texts("Documents 1 and 2 were signed in 1990.") == ["Documents 1 and 2 were signed in 1990."]
    assert _texts("The source of the river is in the Alps.") == ["The source of the river is in the Alps."]


def test_a_summary_s_framing_of_its_source_is_stripped() -> None:
    for framed in (
        "The article reports that the council closed the library in March.",
        "The news article highlights that the council closed the library in March.",
        "The passage describes how the council closed the library in March.",
        "The author explains that the council closed the library in March.",
        "The story mainly focuses on how the council closed the library in March.",
        "The text talks about how the council closed the library in March.",
        "Therefore, the council closed the library in March.",
        "I would say that the council closed the library in March.",
        "From what I can tell, the council closed the library in March.",
        "I should note that the council closed the library in March.",
        "From the given context, we can infer that the council closed the library in March.",
        "It can be seen from the passages that the council closed the library in March.",
        "Passage 1 and passage 3 both mention that the council closed the library in March.",
        "Both passages agree that the council closed the library in March.",
        "Based on my analysis of the passages, the council closed the library in March.",
        "Based on the provided JSON data, the council closed the library in March.",
        "According to the reviews, the council closed the library in March.",
    ):
        assert _texts(framed) == ["The council closed the library in March."], framed
    assert _texts("This article is about the library's closure.") == ["The library's closure."]
    # "about" before a number or "to" is the claim's own word, not the frame's.
    assert _texts("The author is about 50 years old.") == ["The author is about 50 years old."]
    assert _texts("The report was published in 2019.") == ["The report was published in 2019."]
    assert _texts("Reviews are mixed.") == ["Reviews are mixed."]


def test_courtesy_and_sentences_about_the_question_are_not_claims() -> None:
    for closer in (
        "I'm happy to help!",
        "I'd be glad to help with that.",
        "I am glad to assist you.",
        "If you have any further questions, please let me know.",
        "If you have any questions, feel free to ask.",
        "The question is asking about the retention period.",
        "The user wants to know how long logs are kept.",
    ):
        assert _texts(f"Logs are kept for five years. {closer}") == ["Logs are kept for five years."], closer


def test_citation_formats_of_chat_products_and_markdown() -> None:
    ids = ["C1", "C2", "C3"]
    for answer in (
        "Logs are kept for five years【1†source】. Backups are encrypted【2†policy.pdf】.",
        "Logs are kept for five years【4:0†source】. Backups are encrypted【4:1†source】.",
        "Logs are kept for five years[^1]. Backups are encrypted[^2].",
        "Logs are kept for five years<sup>1</sup>. Backups are encrypted<sup>[2]</sup>.",
        "Logs are kept for five years\u00b9. Backups are encrypted\u00b2.",
        "Logs are kept for five years [[1]]. Backups are encrypted [[2]].",
        "Logs are kept for five years [source: 1]. Backups are encrypted [source: 2].",
        # after the full stop, as Wikipedia and answer engines cite
        "Logs are kept for five years.[1] Backups are encrypted.[2]",
        "Logs are kept for five years.\u30101\u2020source\u3011 Backups are encrypted.\u30102\u2020source\u3011",
    ):
        claims = extract_claims(answer, ids).claims
        assert [(c.text, c.citations) for c in claims] == [
            ("Logs are kept for five years.", ["C1"]),
            ("Backups are encrypted.", ["C2"]),
        ], answer


def test_markers_after_a_stop_run_together() -> None:
    claims = extract_claims(
        "Logs are kept for five years.[1][3] Backups are encrypted.", ["C1", "C2", "C3"]
    ).claims
    assert [(c.text, c.citations) for c in claims] == [
        ("Logs are kept for five years.", ["C1", "C3"]),
        ("Backups are encrypted.", []),
    ]


def test_links_and_a_sources_section_are_not_claims() -> None:
    answer = (
        "Logs are kept for five years [1]. See the [retention policy](https://example.org/policy) "
        "or https://example.org/faq for details.\n\nSources:\n[1] Records policy, https://example.org/policy\n"
        "- [FAQ](https://example.org/faq)\n\nBackups are encrypted."
    )
    assert _texts(answer) == [
        "Logs are kept for five years.",
        "See the retention policy or for details.",
        "Backups are encrypted.",
    ]


@pytest.mark.parametrize(
    ("sentence", "claims"),
    [
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
    ],
)
def test_and_in_a_paired_phrase_or_before_a_shared_subject_s_verb(sentence: str, claims: list[str]) -> None:
    """ "between X and Y" joins nouns; a tail whose verb follows another "and" has no subject of
    its own; a borrowed head skips a relative clause; an irregular past borrows the head."""
    assert _texts(sentence) == claims
