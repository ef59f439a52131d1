#!/usr/bin/env python3
"""Writes each schema's counts into bench/corpus/schemas.json: the schema's members
(bench/corpus/stats.mjs) and the corpus's questions by style, the dev set included.

    python3 bench/corpus/counts.py      (after scripts/setup has fetched the schemas)
"""

import collections
import glob
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("WAYFINDER_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
HOME = os.environ.get("WAYFINDER_HOME", os.path.join(ROOT, ".wayfinder"))


def style(question):
    return question.get("style") or ("action" if question.get("kind") == "mutation" else "question")


def main():
    path = os.path.join(HERE, "schemas.json")
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    for name, entry in manifest["schemas"].items():
        source = entry["source"]
        schema = (os.path.join(SHARED, "eval", source["path"]) if source["registry"] == "shared"
                  else os.path.join(HOME, "schemas", f"{name}.graphql"))
        stats = subprocess.run(["node", os.path.join(HERE, "stats.mjs"), schema],
                               capture_output=True, check=True, text=True).stdout
        entry["counts"] = json.loads(stats)
        files = sorted(glob.glob(os.path.join(HERE, "questions", name, "*.jsonl")))
        if "dev_set" in entry:
            files.append(os.path.join(SHARED, "eval", entry["dev_set"]))
        styles = collections.Counter()
        for file in files:
            with open(file, encoding="utf-8") as lines:
                styles.update(style(json.loads(line)) for line in lines if line.strip())
        entry["questions"] = dict(sorted(styles.items()))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
