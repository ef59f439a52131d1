#!/usr/bin/env python3
"""Ablation of the ranking stages over every question set, with a leave-one-schema-out table.

    python3 bench/ablate.py [--wayfinder target/release/wayfinder] [--work DIR] [--stages a,b]

Runs `wayfinder eval --params` once with the default params and once with each stage switched
off (rank::Params::stages less that stage), over the dev sets (../shared/eval), our own sets
on the same schemas (bench/corpus/questions/<schema>/{actions,reads}) and our cross-schema sets
(bench/corpus/questions/{codex,tribe,unchained}/own, schemas fetched by scripts/setup). Each run's answers
stay in DIR (`<variant>.jsonl`, params beside them), so a second call only runs what is missing.

Prints, per variant, R@5 per set and the change in questions against the defaults; then the
leave-one-schema-out table: for each schema, the stages a decision made on the other schemas
alone would switch off (those whose removal raises the mean R@5 over the other schemas' sets
and lowers none of them by more than one question), and that choice's R@5 on the schema left
out, against the defaults'.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "eval")
SCHEMAS = os.environ.get("WAYFINDER_HOME", os.path.join(ROOT, ".wayfinder")) + "/schemas"
OWN = os.path.join(ROOT, "bench", "corpus", "questions")

# schema name -> (schema file, [(set name, questions file)])
SETS = {
    "github": (f"{SHARED}/schemas/monolithic/github/schema.graphql", [
        ("github.dev", f"{SHARED}/questions/github.dev.jsonl"),
        ("github-actions", f"{OWN}/github/actions.jsonl"),
        ("github-reads", f"{OWN}/github/reads.jsonl"),
    ]),
    "saleor": (f"{SHARED}/schemas/monolithic/saleor/schema.graphql", [
        ("saleor.dev", f"{SHARED}/questions/saleor.dev.jsonl"),
        ("saleor-actions", f"{OWN}/saleor/actions.jsonl"),
        ("saleor-reads", f"{OWN}/saleor/reads.jsonl"),
    ]),
    "spotify": (f"{SHARED}/schemas/federated/spotify-showcase/supergraph.graphql", [
        ("spotify.dev", f"{SHARED}/questions/spotify-supergraph.dev.jsonl"),
        ("spotify-actions", f"{OWN}/spotify/actions.jsonl"),
        ("spotify-reads", f"{OWN}/spotify/reads.jsonl"),
    ]),
    "codex": (f"{SCHEMAS}/codex.graphql", [("codex", f"{OWN}/codex/own.jsonl")]),
    "tribe": (f"{SCHEMAS}/tribe.graphql", [("tribe", f"{OWN}/tribe/own.jsonl")]),
    "unchained": (f"{SCHEMAS}/unchained.graphql", [("unchained", f"{OWN}/unchained/own.jsonl")]),
}

STAGES = [
    "spelling", "intent", "action_candidates", "priors", "narrowing", "outcome", "action",
    "thin", "tokens", "owner", "answer", "verb", "path", "deprecation", "named",
]


def read_jsonl(path):
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def run(binary, work, variant, stages):
    out = os.path.join(work, f"{variant}.jsonl")
    if os.path.exists(out):
        return {r["id"]: r["deep_rank"] for r in read_jsonl(out)}
    params = os.path.join(work, f"{variant}.params-in.json")
    with open(params, "w", encoding="utf-8") as f:
        json.dump({"stages": stages}, f)
    pairs = []
    for schema, (path, sets) in SETS.items():
        merged = os.path.join(work, f"questions-{schema}.jsonl")
        with open(merged, "w", encoding="utf-8") as f:
            for _, questions in sets:
                with open(questions, encoding="utf-8") as q:
                    f.write(q.read().rstrip("\n") + "\n")
        pairs += [path, merged]
    partial = out + ".partial"
    subprocess.run([binary, "eval", *pairs, "--params", params, "--out", partial],
                   check=True, stdout=subprocess.DEVNULL)
    os.replace(partial, out)
    os.replace(partial + ".params.json", out + ".params.json")
    return {r["id"]: r["deep_rank"] for r in read_jsonl(out)}


def figures(ranks, ids):
    n = len(ids)
    r = [ranks[i] for i in ids]
    at = lambda k: sum(1 for x in r if x is not None and x <= k)
    mrr = sum(1 / x for x in r if x is not None and x <= 10) / n
    return {"n": n, "r1": at(1), "r5": at(5), "r10": at(10), "mrr": mrr}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wayfinder", default=os.path.join(ROOT, "target/release/wayfinder"))
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "wayfinder-ablation"))
    parser.add_argument("--stages", default=",".join(STAGES))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    set_ids = {name: [q["id"] for q in read_jsonl(path)]
               for _, sets in SETS.values() for name, path in sets}
    set_schema = {name: schema for schema, (_, sets) in SETS.items() for name, _ in sets}

    variants = {"defaults": STAGES}
    for stage in args.stages.split(","):
        variants[f"no-{stage}"] = [s for s in STAGES if s != stage]
    results = {}
    for variant, stages in variants.items():
        print(f"running {variant}", file=sys.stderr, flush=True)
        ranks = run(args.wayfinder, args.work, variant, stages)
        results[variant] = {name: figures(ranks, ids) for name, ids in set_ids.items()}

    base = results["defaults"]
    names = list(set_ids)
    mean = lambda res, sets: sum(res[s]["r5"] / res[s]["n"] for s in sets) / len(sets)
    print("R@5 by set (defaults), then each stage switched off: questions gained (+) or lost (-)")
    print(f"{'variant':<22}" + "".join(f"{n[:14]:>15}" for n in names) + f"{'mean R@5':>10}")
    print(f"{'defaults':<22}" + "".join(f"{base[n]['r5'] / base[n]['n']:>15.3f}" for n in names)
          + f"{mean(base, names):>10.3f}")
    for variant in list(results)[1:]:
        res = results[variant]
        print(f"{variant:<22}" + "".join(f"{res[n]['r5'] - base[n]['r5']:>+15d}" for n in names)
              + f"{mean(res, names) - mean(base, names):>+10.3f}")

    print("\nleave-one-schema-out: stages the other schemas' sets would switch off, and R@5 on "
          "the schema left out")
    print(f"{'left out':<12}{'switched off':<40}{'defaults':>10}{'chosen':>10}")
    loso = []
    for held in SETS:
        train = [n for n in names if set_schema[n] != held]
        test = [n for n in names if set_schema[n] == held]
        off = []
        for variant in list(results)[1:]:
            res = results[variant]
            gains = mean(res, train) > mean(base, train)
            harmless = all(res[n]["r5"] - base[n]["r5"] >= -1 for n in train)
            if gains and harmless:
                off.append(variant[3:])
        if off:
            chosen = run(args.wayfinder, args.work, "off-" + "-".join(off),
                         [s for s in STAGES if s not in off])
            chosen = {n: figures(chosen, set_ids[n]) for n in test}
        else:
            chosen = {n: base[n] for n in test}
        before, after = mean(base, test), mean(chosen, test)
        loso.append((before, after))
        print(f"{held:<12}{','.join(off) or '-':<40}{before:>10.3f}{after:>10.3f}")
    print(f"{'mean':<12}{'':<40}{sum(b for b, _ in loso) / len(loso):>10.3f}"
          f"{sum(a for _, a in loso) / len(loso):>10.3f}")


if __name__ == "__main__":
    main()
