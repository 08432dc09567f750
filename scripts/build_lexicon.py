"""Build the local judge's word-relation table from the WordNet 3.0 database files.

The judge ships the table (``collector/judge/text/wordnet/relations.tsv``, read by
:mod:`ragpulse.collector.judge.text.lexicon`); WordNet itself is needed only here. The Debian
package ``wordnet-base`` (1:3.0-37) holds the database files::

    apt-get download wordnet-base
    dpkg-deb -x wordnet-base_1%3a3.0-37_all.deb /tmp/wn
    python scripts/build_lexicon.py /tmp/wn/usr/share/wordnet

Three relations, between single lower-case words (no phrases, names or hyphenated forms):

- ``syn``: the words of one synset that each have it among their first ``--senses`` senses
  (WordNet orders a word's senses by frequency in its tagged corpus), so that a rare sense
  (``bank`` as a row of keys) does not make two common words synonyms;
- ``der``: derivationally related forms (``decide``/``decision``, ``die``/``death``) whose
  source sense is among the word's first ``--senses`` senses;
- ``ant``: direct antonyms (``large``/``small``, ``increase``/``decrease``) from the same
  senses, adjectives, verbs and adverbs (noun antonyms too with ``--noun-antonyms``).

Each line is one relation and its words (tab, then the words sorted, space-separated);
lines are sorted and unique, so the same database and options give the same bytes.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "collector" / "judge" / "text" / "wordnet" / "relations.tsv"
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_WORD = re.compile(r"^[a-z]{2,}$")
HEADER = (
    "# Word relations for the ragpulse local judge, derived from WordNet 3.0\n"
    "# (Princeton University; licence in LICENSE beside this file; database files\n"
    "# of the Debian package wordnet-base 1:3.0-37) by scripts/build_lexicon.py {options}.\n"
    "# Each line: relation (syn, der, ant), a tab, the related words.\n"
)


def _lemma(word: str) -> str:
    """A data-file word as a plain lemma: adjective markers (``(a)``, ``(p)``) dropped."""
    return re.sub(r"\(\w+\)$", "", word).lower()


def read_index(db: Path) -> dict[tuple[str, str], int]:
    """(synset offset with pos, lemma) -> the sense's rank among the lemma's senses (1 = most frequent)."""
    rank: dict[tuple[str, str], int] = {}
    for pos, name in POS_FILES.items():
        for line in (db / f"index.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue  # the licence header
            parts = line.split()
            lemma, n_synsets, n_ptrs = parts[0], int(parts[2]), int(parts[3])
            offsets = parts[4 + n_ptrs + 2 :]
            assert len(offsets) == n_synsets, line
            for i, off in enumerate(offsets, 1):
                rank[(f"{pos}{off}", lemma)] = i
    return rank


def read_synsets(db: Path) -> dict[str, tuple[list[str], list[tuple[str, str, int, int]]]]:
    """Synset key (pos + offset) -> (its words, its lexical pointers: symbol, target key,
    source word number, target word number; 0 for a pointer between whole synsets)."""
    out: dict[str, tuple[list[str], list[tuple[str, str, int, int]]]] = {}
    for pos, name in POS_FILES.items():
        for line in (db / f"data.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            fields = line.split(" | ")[0].split()
            off, n_words = fields[0], int(fields[3], 16)
            words = [_lemma(fields[4 + 2 * i]) for i in range(n_words)]
            k = 4 + 2 * n_words
            n_ptrs = int(fields[k])
            ptrs = []
            for j in range(n_ptrs):
                sym, target, tpos, st = fields[k + 1 + 4 * j : k + 5 + 4 * j]
                tpos = "a" if tpos == "s" else tpos
                ptrs.append((sym, f"{tpos}{target}", int(st[:2], 16), int(st[2:], 16)))
            out[f"{pos}{off}"] = (words, ptrs)
    return out


def relations(db: Path, senses: int, noun_antonyms: bool) -> list[str]:
    """The table's lines (without the header), sorted and unique."""
    rank = read_index(db)
    synsets = read_synsets(db)

    def common(key: str, word: str) -> bool:
        return _WORD.match(word) is not None and rank.get((key, word), senses + 1) <= senses

    lines: set[str] = set()
    pairs: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for key, (words, ptrs) in synsets.items():
        members = sorted({w for w in words if common(key, w)})
        if len(members) > 1:
            lines.add("syn\t" + " ".join(members))
        for sym, target, src, dst in ptrs:
            if not src or sym not in ("+", "!"):
                continue
            word, other = words[src - 1], synsets[target][0][dst - 1]
            if not common(key, word) or _WORD.match(other) is None or word == other:
                continue
            if sym == "+":
                pairs["der"].add((word, other))
            elif key[0] != "n" or noun_antonyms:
                pairs["ant"].add((word, other))
    for rel, found in pairs.items():
        lines.update(f"{rel}\t{' '.join(sorted(p))}" for p in found)
    return sorted(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wordnet", type=Path, help="the folder with WordNet 3.0's index.* and data.* files")
    ap.add_argument("--senses", type=int, default=2, help="a word's senses kept, most frequent first")
    ap.add_argument("--noun-antonyms", action="store_true")
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    options = f"--senses {args.senses}" + (" --noun-antonyms" if args.noun_antonyms else "")
    body = relations(args.wordnet, args.senses, args.noun_antonyms)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(HEADER.format(options=options) + "\n".join(body) + "\n", encoding="utf-8")
    counts = defaultdict(int)
    for line in body:
        counts[line.split("\t")[0]] += 1
    print(
        f"wrote {args.out}: {dict(sorted(counts.items()))}, {args.out.stat().st_size} bytes", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
