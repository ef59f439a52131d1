#!/usr/bin/env python3
"""Writes description pairs: extra fitting data drawn from the corpus schemas themselves.

    bench/fit/pairs.py [--work target/pairs] [--per-schema 150] [--schemas a,b]

For each corpus schema, up to N described members (fields, arguments, input fields, enum values,
types; not deprecated, a description of at least four words that no other member shares) are
drawn with a fixed seed. Their descriptions are left out of a copy of the schema,
WORK/<schema>.graphql, and asked as questions against it, WORK/<schema>.jsonl (style
`description`, the member expected). `bench/fit/run.py --pairs WORK` runs them beside the
corpus; `bench/fit/fit.py` fits on the pairs of every schema but the one left out and never
counts them in a figure (issue 53: "labelled as such and never counted as evaluation").

Needs graphql-core (bench/fit/requirements.txt).
"""

import argparse
import collections
import json
import os
import random
import re
import sys

import dataclasses

from graphql import parse, print_ast, visit, Visitor
from graphql.language import ast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the corpus manifest and its schema files)

SEED = 20261128
MIN_WORDS = 4
# A question is a sentence or two: a longer description is cut at a sentence end past this.
MAX_WORDS = 40


def deprecated(node):
    return any(d.name.value == "deprecated" for d in node.directives or ())


def described(document):
    """(coordinate, node) for every member with a description, in document order."""
    for definition in document.definitions:
        name = getattr(definition, "name", None)
        if name is None or name.value.startswith("__"):
            continue
        parent = name.value
        if isinstance(definition, ast.TypeDefinitionNode) and definition.description:
            yield parent, definition
        if isinstance(definition, (ast.ObjectTypeDefinitionNode, ast.InterfaceTypeDefinitionNode,
                                   ast.ObjectTypeExtensionNode, ast.InterfaceTypeExtensionNode)):
            for field in definition.fields or ():
                if field.description:
                    yield f"{parent}.{field.name.value}", field
                for argument in field.arguments or ():
                    if argument.description:
                        yield f"{parent}.{field.name.value}({argument.name.value}:)", argument
        elif isinstance(definition, (ast.InputObjectTypeDefinitionNode, ast.InputObjectTypeExtensionNode)):
            for field in definition.fields or ():
                if field.description:
                    yield f"{parent}.{field.name.value}", field
        elif isinstance(definition, (ast.EnumTypeDefinitionNode, ast.EnumTypeExtensionNode)):
            for value in definition.values or ():
                if value.description:
                    yield f"{parent}.{value.name.value}", value


class Strip(Visitor):
    """Leaves the description out of the nodes whose ids it holds (the AST is immutable)."""

    def __init__(self, ids):
        super().__init__()
        self.ids = ids

    def enter(self, node, *_):
        if id(node) in self.ids:
            return dataclasses.replace(node, description=None)
        return None


def question_of(description):
    words = description.split()
    if len(words) <= MAX_WORDS:
        return " ".join(words)
    text = " ".join(words[:MAX_WORDS])
    end = max(text.rfind(". "), text.rfind("? "))
    return text[: end + 1] if end > 0 else text


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.path.join(run.ROOT, "target", "pairs"))
    parser.add_argument("--per-schema", type=int, default=150)
    parser.add_argument("--schemas", default="", help="comma-separated corpus names (default: all)")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    only = {s for s in args.schemas.split(",") if s}
    for name, schema, _ in run.corpus_sets(only):
        with open(schema, encoding="utf-8") as f:
            document = parse(f.read(), no_location=True)
        members = list(described(document))
        texts = collections.Counter(re.sub(r"\s+", " ", n.description.value.strip()).lower()
                                    for _, n in members)
        eligible = [
            (coordinate, node) for coordinate, node in members
            if not deprecated(node)
            and len(node.description.value.split()) >= MIN_WORDS
            and texts[re.sub(r"\s+", " ", node.description.value.strip()).lower()] == 1
        ]
        chosen = random.Random(f"{SEED}-{name}").sample(eligible, min(args.per_schema, len(eligible)))
        with open(os.path.join(args.work, f"{name}.jsonl"), "w", encoding="utf-8") as out:
            for i, (coordinate, node) in enumerate(chosen):
                out.write(json.dumps({
                    "id": f"pair-{name}-{i:03}",
                    "query": question_of(node.description.value),
                    "expected": [coordinate],
                    "style": "description",
                }) + "\n")
        with open(os.path.join(args.work, f"{name}.graphql"), "w", encoding="utf-8") as out:
            out.write(print_ast(visit(document, Strip({id(node) for _, node in chosen}))))
        print(f"{name}: {len(chosen)} pairs of {len(eligible)} eligible members")


if __name__ == "__main__":
    main()
