#!/usr/bin/env python3
"""Runs the whole question corpus through `wayfinder eval`, writing what the ranker is fitted on.

    bench/fit/run.py [--wayfinder target/release/wayfinder] [--work DIR] [--schemas a,b]
                     [--params FILE] [--pairs DIR] [--models DIR] [-- MORE EVAL ARGUMENTS]

For each schema of bench/corpus/schemas.json (the dev schemas read from ../shared, the others
fetched by scripts/setup into .wayfinder/schemas), its questions (the dev set and every file
under bench/corpus/questions/<schema>/) are merged into DIR/questions-<schema>.jsonl, each
line's `schema` set to the corpus name; then one `wayfinder eval` over all of them writes
DIR/features.jsonl (every question's candidates and feature rows, `--features`) and
DIR/answers.jsonl (the ranking's answers, `--out`), and prints the figures per set and pooled.
bench/fit/fit.py reads both. `--pairs DIR` adds the description pairs bench/fit/pairs.py wrote
(each schema's copy without the drawn descriptions, and those descriptions asked against it).
`--models DIR` (bench/fit/tune.py's folds) runs each schema on its own, through the model
tuned without it (`--model-tuning DIR/<schema>.safetensors`), and joins the files: what a
ranker for the tuned model is fitted on and measured by, leaving one schema out.
Arguments after `--` go to `wayfinder eval` as they are: another
model, for example (`--model-onnx DIR/model.onnx --model-tokenizer DIR/tokenizer.json
--model-dimension 768`), to fit a ranker for it.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("WAYFINDER_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
HOME = os.environ.get("WAYFINDER_HOME", os.path.join(ROOT, ".wayfinder"))
CORPUS = os.path.join(ROOT, "bench", "corpus")


def corpus_sets(only):
    """(name, schema file, question files) for each corpus schema, in manifest order."""
    with open(os.path.join(CORPUS, "schemas.json"), encoding="utf-8") as f:
        manifest = json.load(f)["schemas"]
    for name, entry in manifest.items():
        if only and name not in only:
            continue
        source = entry["source"]
        if source["registry"] == "shared":
            schema = os.path.join(SHARED, "eval", source["path"])
        else:
            schema = os.path.join(HOME, "schemas", f"{name}.graphql")
        files = sorted(glob.glob(os.path.join(CORPUS, "questions", name, "*.jsonl")))
        if "dev_set" in entry:
            files.insert(0, os.path.join(SHARED, "eval", entry["dev_set"]))
        yield name, schema, files


def merge(files, name, out_path):
    """Writes the questions of `files` to `out_path`, each line's `schema` set to `name`."""
    with open(out_path, "w", encoding="utf-8") as out:
        for path in files:
            with open(path, encoding="utf-8") as lines:
                for line in lines:
                    if line.strip():
                        question = json.loads(line)
                        question["schema"] = name
                        out.write(json.dumps(question) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wayfinder", default=os.path.join(ROOT, "target", "release", "wayfinder"))
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "fit"))
    parser.add_argument("--schemas", default="", help="comma-separated corpus names (default: all)")
    parser.add_argument("--params", help="ranking params file for `wayfinder eval --params`")
    parser.add_argument("--pairs", help="folder of bench/fit/pairs.py's description pairs, fitting data only")
    parser.add_argument("--models", help="folder of bench/fit/tune.py's folds, one tuning per schema")
    parser.add_argument("eval", nargs=argparse.REMAINDER, help="after `--`: more `wayfinder eval` arguments")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.params:
        # Read once: a `<(...)` path is a pipe, gone after the first eval and never passed on
        # to a child process (and one shutil.copyfile refuses).
        with open(args.params, encoding="utf-8") as given:
            text = given.read()
        args.params = os.path.join(args.work, "params.json")
        with open(args.params, "w", encoding="utf-8") as copy:
            copy.write(text)
    only = {s for s in args.schemas.split(",") if s}
    pairs = []
    runs = []
    for name, schema, files in corpus_sets(only):
        if not os.path.exists(schema):
            sys.exit(f"run: {schema} is missing (scripts/setup fetches the corpus schemas)")
        merged = os.path.join(args.work, f"questions-{name}.jsonl")
        merge(files, name, merged)
        pairs += [schema, merged]
        described = os.path.join(args.pairs or "", f"{name}.jsonl")
        if args.pairs and os.path.exists(described):
            merged = os.path.join(args.work, f"pairs-{name}.jsonl")
            merge([described], name, merged)
            pairs += [os.path.join(args.pairs, f"{name}.graphql"), merged]
        if args.models:
            runs.append((name, pairs))
            pairs = []
    if not args.models:
        evaluate(args, pairs, args.params, "")
        return
    for name, pairs in runs:
        tuning = ["--model-tuning", os.path.join(os.path.abspath(args.models), f"{name}.safetensors")]
        evaluate(args, pairs, args.params, f"-{name}", tuning)
    for kind in ("features", "answers"):
        with open(os.path.join(args.work, f"{kind}.jsonl"), "w", encoding="utf-8") as out:
            for i, (name, _) in enumerate(runs):
                with open(os.path.join(args.work, f"{kind}-{name}.jsonl"), encoding="utf-8") as part:
                    for j, line in enumerate(part):
                        if kind == "answers" or i == 0 or j > 0:
                            out.write(line)


def evaluate(args, pairs, params, suffix, extra=()):
    """One `wayfinder eval` over the (schema, questions) `pairs`."""
    command = [args.wayfinder, "eval", *pairs,
               "--features", os.path.join(args.work, f"features{suffix}.jsonl"),
               "--out", os.path.join(args.work, f"answers{suffix}.jsonl")]
    if params:
        command += ["--params", params]
    command += [*extra, *(a for a in args.eval if a != "--")]
    subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
