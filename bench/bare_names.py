#!/usr/bin/env python3
"""Bare member names as questions: how often a member of the name comes first.

For each dev schema, 100 member names in camel case or with underscores (`nameWithOwner`,
`NOT_PLANNED`; an argument by its own name, `headRefName`), drawn with a fixed seed from
`wayfinder catalog --coordinates`, are asked alone, with every member of that name expected;
then 100 names that several types share, each asked with the words of one type that has it
(`stargazerCount of a repository`), that type's member expected; then 100 coordinates written
with their type's first letter in lower case (`repository.nameWithOwner`, `issueState`; a type
of one word, `issue`, is an everyday word and left out), that coordinate expected. Each set goes
through `wayfinder eval`, which prints recall and MRR per schema and pooled.

    python3 bench/bare_names.py [path/to/wayfinder]    (default: target/release/wayfinder)
"""

import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "eval" / "schemas"
SCHEMAS = {
    "github": SHARED / "monolithic/github/schema.graphql",
    "saleor": SHARED / "monolithic/saleor/schema.graphql",
    "spotify": SHARED / "federated/spotify-showcase/supergraph.graphql",
}
IDENTIFIER = re.compile(r"[a-z][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]")
SAMPLE = 100


def words(name):
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name)
    return name.replace("_", " ").lower()


def bare(coordinate):
    """(owner type, bare name) of a member coordinate; None for types and directives."""
    if coordinate.startswith("@") or "." not in coordinate:
        return None
    owner, member = coordinate.split(".", 1)
    argument = re.fullmatch(r"(\w+)\((\w+):\)", member)
    return (None, argument.group(2)) if argument else (owner, member)


def main():
    wayfinder = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target/release/wayfinder")
    rng = random.Random(7)
    case_rng = random.Random(11)  # its own, so the other two draw what they drew before it
    with tempfile.TemporaryDirectory() as tmp:
        alone, owned, cased = [], [], []
        for schema, path in SCHEMAS.items():
            coordinates = subprocess.run(
                [wayfinder, "catalog", "--coordinates", str(path)],
                check=True, capture_output=True, text=True,
            ).stdout.split()
            by_name = {}
            for coordinate in coordinates:
                if (parsed := bare(coordinate)) and IDENTIFIER.search(parsed[1]):
                    by_name.setdefault(parsed[1], []).append((parsed[0], coordinate))
            names = sorted(by_name)
            rng.shuffle(names)
            questions = [
                {"id": f"{schema}-{i}", "query": name, "kind": "exact",
                 "expected": [c for _, c in by_name[name]]}
                for i, name in enumerate(names[:SAMPLE])
            ]
            shared = [n for n in names if len([o for o, _ in by_name[n] if o]) >= 2]
            with_owner = []
            for i, name in enumerate(shared[:SAMPLE]):
                owner, coordinate = rng.choice([m for m in by_name[name] if m[0]])
                with_owner.append({"id": f"{schema}-owned-{i}", "kind": "exact",
                                   "query": f"{name} of a {words(owner)}",
                                   "expected": [coordinate]})
            lowered = [(c, c[0].lower() + c[1:]) for c in coordinates if not c.startswith("@")]
            lowered = [(c, low) for c, low in lowered if "." in low or IDENTIFIER.search(low)]
            case_rng.shuffle(lowered)
            in_lower_case = [{"id": f"{schema}-case-{i}", "kind": "exact", "query": low,
                              "expected": [c]} for i, (c, low) in enumerate(lowered[:SAMPLE])]
            for kind, batch, out in (("alone", questions, alone), ("owned", with_owner, owned),
                                     ("case", in_lower_case, cased)):
                file = Path(tmp) / f"{schema}-{kind}.jsonl"
                file.write_text("".join(json.dumps(q) + "\n" for q in batch))
                out += [str(path), str(file)]
        for title, args in (("names alone", alone), ("names with an owner's words", owned),
                            ("coordinates in another case", cased)):
            print(f"== {title}")
            report = subprocess.run([wayfinder, "eval", *args], check=True,
                                    capture_output=True, text=True).stdout
            for line in report.splitlines():
                if ".jsonl on " in line:
                    print(Path(line.split(" on ")[0]).stem)
                elif line.startswith(("pooled", "kind", "overall")):
                    print(line)


if __name__ == "__main__":
    main()
