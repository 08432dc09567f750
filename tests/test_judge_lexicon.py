"""The WordNet word relations (collector/judge/text/lexicon.py, scripts/build_lexicon.py) and the
antonym contradiction rule of the local judge (conflicts.antonym_swap), on hand-made cases."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.local.rules.conflicts import antonym_conflicts, antonym_swap
from ragpulse.collector.judge.text.lexicon import lemmas_of, lexicon_digest, load_lexicon, parse_lexicon
from ragpulse.collector.judge.text.tokens import profile, stem

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "collector" / "judge" / "text" / "wordnet" / "relations.tsv"

SMALL = """# a comment line
syn\tbig large
der\tchoice choose
ant\tlarge small
ant\timprovident provident
"""


def test_parse_relates_synonyms_and_derived_forms_by_match_key() -> None:
    lex = parse_lexicon(SMALL)
    assert lex.related_keys[stem("large")] == {stem("big")[:4]}
    assert lex.related_keys[stem("big")] == {stem("large")[:4]}
    assert lex.related_keys[stem("choice")] == {stem("choose")[:4]}
    assert stem("small") not in lex.related_keys  # antonyms are not related forms


def test_parse_reads_antonyms_both_ways_and_relations_can_be_left_out() -> None:
    lex = parse_lexicon(SMALL, frozenset())
    assert lex.related_keys == {}
    assert lex.antonyms["large"] == {"small"} and lex.antonyms["small"] == {"large"}
    assert lex.antonym_lemmas[stem("large")] == ("large",)
    syn_only = parse_lexicon(SMALL, frozenset({"syn"}))
    assert stem("choice") not in syn_only.related_keys and stem("big") in syn_only.related_keys


def test_lemmas_are_matched_by_spelling_not_only_by_the_truncated_stem() -> None:
    lex = parse_lexicon(SMALL)
    assert stem("improved") == stem("improvident")  # the stems meet ...
    assert lemmas_of({"improved"}, lex) == set()  # ... the spellings do not
    assert lemmas_of({"larger", "smallest", "improvident"}, lex) == {"large", "small", "improvident"}


def test_packaged_table_is_small_sorted_and_records_its_provenance() -> None:
    raw = TABLE.read_bytes()
    assert len(raw) < 5_000_000
    lines = raw.decode("utf-8").splitlines()
    header = [x for x in lines if x.startswith("#")]
    body = [x for x in lines if not x.startswith("#")]
    assert "WordNet 3.0" in header[0] and any("scripts/build_lexicon.py" in h for h in header)
    assert body == sorted(set(body))
    for line in body:
        rel, words = line.split("\t")
        assert rel in {"syn", "der", "ant"}
        ws = words.split()
        assert ws == sorted(ws) and len(ws) >= 2 and all(re.fullmatch(r"[a-z]{2,}", w) for w in ws)
    licence = (TABLE.parent / "LICENSE").read_text(encoding="utf-8")
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in licence
    assert re.fullmatch(r"[0-9a-f]{8}", lexicon_digest())


def test_packaged_table_holds_the_common_antonyms() -> None:
    ants = load_lexicon(frozenset()).antonyms
    for a, b in [("increase", "decrease"), ("large", "small"), ("win", "lose"), ("accept", "reject")]:
        assert b in ants[a]


def _write_db(folder: Path) -> None:
    """A three-synset WordNet in the database files' format (index.*, data.*)."""
    licence = "  1 This software and database is being provided to you\n"
    files = {
        "index.adj": "big a 2 1 ! 2 1 00000001 00000003\nlarge a 1 1 ! 1 1 00000001\n"
        "small a 1 1 ! 1 1 00000002\n",
        "data.adj": "00000001 00 a 02 large 0 big 0 001 ! 00000002 a 0101 | above average in size\n"
        "00000002 00 a 01 small 0 001 ! 00000001 a 0101 | below average in size\n"
        "00000003 00 a 02 big 1 heavy 0 000 | rare sense\n",
        "index.noun": "",
        "data.noun": "",
        "index.verb": "",
        "data.verb": "",
        "index.adv": "",
        "data.adv": "",
    }
    for name, text in files.items():
        (folder / name).write_text(licence + text, encoding="latin-1")


def test_build_script_reads_the_database_files(tmp_path: Path) -> None:
    _write_db(tmp_path)
    out = tmp_path / "relations.tsv"
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "build_lexicon.py"),
        str(tmp_path),
        "--senses",
        "1",
        "-o",
        str(out),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    body = [x for x in out.read_text(encoding="utf-8").splitlines() if not x.startswith("#")]
    # "heavy" is not a synonym of "big": the synset is big's second sense, cut by --senses 1.
    assert body == ["ant\tlarge small", "syn\tbig large"]
    again = tmp_path / "again.tsv"
    subprocess.run([*cmd[:-1], str(again)], check=True, capture_output=True)
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(
    ("claim", "sentence"),
    [
        ("Revenue increased in 2020.", "Revenue decreased in 2020."),
        ("The new warehouse is larger than the old one.", "The new warehouse is smaller than the old one."),
        ("The team won the final.", "The team lost the final."),
        ("The company accepted the merger offer.", "The company rejected the merger offer."),
        ("Logs are kept for the maximum period.", "Logs are kept for the minimum period."),
        ("The earliest records come from Rome.", "The latest records come from Rome."),
        ("The patient was alive in May.", "The patient died in May."),
    ],
)
def test_a_word_swapped_for_its_antonym_conflicts(claim: str, sentence: str) -> None:
    assert antonym_swap(profile(claim), profile(sentence))


@pytest.mark.parametrize(
    ("claim", "sentence"),
    [
        ("Revenue increased in 2020.", "Revenue increased in 2020."),
        ("The bridge is not large.", "The bridge is small."),  # a negated antonym agrees
        ("AI improved the diagnosis.", "AI provided the diagnosis."),  # improvident/provident
        ("Revenue increased in 2020.", "Costs decreased in 2020."),  # not the same statement
        ("Revenue increased in 2020.", "Revenue rose in 2020 while costs decreased."),  # not in its place
        (
            "Revenue increased in 2020.",
            "Revenue decreased in 2020 in the northern region while the southern stores opened new branches.",
        ),  # the antonym may belong to another part of a long sentence
        ("Sales rose and costs fell.", "Sales and costs increased."),  # no WordNet antonym pair
    ],
)
def test_no_conflict_without_a_clean_swap(claim: str, sentence: str) -> None:
    assert not antonym_swap(profile(claim), profile(sentence))


def test_the_rule_reads_the_sentence_the_claim_rests_on() -> None:
    chunk = build_evidence(
        [{"id": "C1", "content": "The store opened in May. Revenue decreased in 2020. Staff grew."}]
    )[0]
    assert antonym_conflicts(profile("Revenue increased in 2020."), chunk)
    assert not antonym_conflicts(profile("Revenue decreased in 2020."), chunk)


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


def test_the_judge_calls_an_antonym_swap_contradicted(judge: LocalJudge) -> None:
    out = judge.judge(
        {
            "trace_id": "t",
            "query": "How did revenue change in 2020?",
            "answer": "Revenue increased sharply in 2020 [1].",
            "chunks": [{"id": "C1", "content": "Revenue decreased sharply in 2020."}],
        }
    )
    claim = out["claims"][0]
    assert claim["verdict"] == "contradicted"
    assert claim["contradicting_chunk_ids"] == ["C1"]
    assert out["judge_id"].startswith("local-5.0:")
