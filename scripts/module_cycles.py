#!/usr/bin/env python3
"""Fails when the modules of a crate use each other in a cycle.

    python3 scripts/module_cycles.py workers/src [more crate src folders]

Reads every `crate::a::b` path in a crate's code (comments and `#[cfg(test)]` modules
excluded) and checks the graph between modules (files) and between top-level folders
for cycles. Prints each cycle found and exits 1; prints the folder graph and exits 0 otherwise.
"""

import os
import re
import sys


def module_of(src, path):
    rel = os.path.relpath(path, src)[: -len(".rs")]
    parts = rel.split(os.sep)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts)


def uses(src):
    modules = {}
    for folder, _, files in os.walk(src):
        for name in files:
            if name.endswith(".rs"):
                path = os.path.join(folder, name)
                modules[module_of(src, path)] = path
    edges = {m: set() for m in modules}
    for module, path in modules.items():
        text = open(path, encoding="utf-8").read()
        text = text.split("#[cfg(test)]")[0]
        # Doc links name a module without using it.
        text = re.sub(r"//[^\n]*", "", text)
        # `use crate::{a::b, c}` lists as well as plain paths.
        for group in re.findall(r"crate::\{([^}]*)\}", text):
            for item in group.split(","):
                item = item.strip()
                if item:
                    edges[module].add(resolve(modules, item))
        for item in re.findall(r"crate::([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)", text):
            edges[module].add(resolve(modules, item))
        edges[module].discard(None)
        edges[module].discard(module)
        # A module's own children are its parts, not a dependency back up.
        edges[module] = {t for t in edges[module] if not t.startswith(module + "::") or module == ""}
    return edges


def resolve(modules, item):
    parts = item.split("::")
    while parts:
        name = "::".join(parts)
        if name in modules:
            return name
        parts.pop()
    return None


def cycles(edges):
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for to in sorted(edges.get(node, ())):
            if state.get(to) == 1:
                found.append(stack[stack.index(to):] + [to])
            elif to not in state:
                visit(to)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def main(folders):
    failed = False
    for src in folders:
        edges = uses(src)
        # Folder level: a parent module (`mod.rs`) re-exporting its children is not a cycle.
        top = {}
        for module, targets in edges.items():
            a = module.split("::")[0]
            for t in targets:
                b = t.split("::")[0]
                if a and b and a != b:
                    top.setdefault(a, set()).add(b)
        for level, graph in (("module", edges), ("folder", top)):
            for cycle in cycles(graph):
                failed = True
                print(f"{src}: {level} cycle: {' -> '.join(cycle)}")
        if not failed:
            print(f"{src}: no module cycles")
            for a in sorted(top):
                print(f"  {a} -> {', '.join(sorted(top[a]))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["workers/src"]))
