#!/usr/bin/env python3
"""Fits the insights' `low_score` default: the best-hit score below which a question is
counted as one the API answered badly.

    bench/fit/low_score.py [--wayfinder target/debug/wayfinder] [--work DIR] [--seed N]
                           [--answers FILE]

Every corpus schema (bench/fit/run.py's sets) is asked its own questions and as many drawn
at random (seeded) from the other schemas' sets: questions its API has no member for. A
question is *answered* when one of its expected members is among the first five hits (its own
questions only), and *answered badly* otherwise (a miss, or another API's question). A
threshold flags a question when nothing is found or its best hit scores below it; the one
kept maximises balanced accuracy (the mean of the share of badly answered questions flagged
and of answered ones left alone, so the number drawn does not weigh), over a grid of
hundredths. Measured by leaving one schema out: the threshold fitted on fifteen schemas,
scored on the sixteenth, per schema and per style, beside the settings' current default;
then fitted on all sixteen (the default to ship).

`--answers FILE` reads an earlier run's `wayfinder eval --out` instead of running it.
The scores are the shipped ranker's, fitted on these schemas' questions: in-sample for the
own questions, so an answered question scores higher here than on a schema nobody fitted on.
"""

import argparse
import json
import os
import random
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import ROOT, corpus_sets  # noqa: E402

CURRENT = 0.3
GRID = [i / 100 for i in range(101)]
TOP = 5


def read_lines(paths):
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    yield json.loads(line)


def write_sets(work, seed):
    """Each schema's own questions and the drawn foreign ones, ids tagged; the eval pairs."""
    sets = list(corpus_sets(set()))
    own = {name: list(read_lines(files)) for name, _, files in sets}
    rng = random.Random(seed)
    pairs = []
    for name, schema, _ in sets:
        if not os.path.exists(schema):
            sys.exit(f"low_score: {schema} is missing (scripts/setup fetches the corpus schemas)")
        others = [(other, q) for other, questions in own.items() if other != name for q in questions]
        foreign = rng.sample(others, len(own[name]))
        path = os.path.join(work, f"low-score-{name}.jsonl")
        with open(path, "w", encoding="utf-8") as out:
            for q in own[name]:
                out.write(json.dumps({**q, "schema": name, "id": f"{name}|own|{q['id']}"}) + "\n")
            for other, q in foreign:
                tagged = {**q, "schema": name, "id": f"{name}|foreign:{other}|{q['id']}"}
                out.write(json.dumps(tagged) + "\n")
        pairs += [schema, path]
    return pairs


def rows(answers):
    """(schema, style, badly answered, best score or None) per answer."""
    for a in answers:
        schema, origin, _ = a["id"].split("|", 2)
        answered = origin == "own" and any(r is not None and r <= TOP for r in a["found"])
        yield schema, a["style"], not answered, a.get("best_score")


def flagged(score, threshold):
    return score is None or score < threshold


def tally(rows_, threshold):
    """(badly answered flagged, badly answered, answered flagged, answered)."""
    bad_flagged = bad = good_flagged = good = 0
    for _, _, is_bad, score in rows_:
        f = flagged(score, threshold)
        if is_bad:
            bad += 1
            bad_flagged += f
        else:
            good += 1
            good_flagged += f
    return bad_flagged, bad, good_flagged, good


def balanced_accuracy(t):
    bad_flagged, bad, good_flagged, good = t
    recall = bad_flagged / bad if bad else 1.0
    specificity = 1 - good_flagged / good if good else 1.0
    return (recall + specificity) / 2


def fit(rows_):
    """The grid's threshold of best balanced accuracy (the lowest of equals)."""
    return max(GRID, key=lambda t: (balanced_accuracy(tally(rows_, t)), -t))


def describe(t):
    bad_flagged, bad, good_flagged, good = t
    precision = bad_flagged / (bad_flagged + good_flagged) if bad_flagged + good_flagged else 0.0
    return (f"{balanced_accuracy(t):.3f} | {bad_flagged / max(bad, 1):.3f} | "
            f"{good_flagged / max(good, 1):.3f} | {precision:.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wayfinder", default=os.path.join(ROOT, "target", "debug", "wayfinder"))
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "fit"))
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--answers", help="an earlier run's answers (wayfinder eval --out)")
    args = parser.parse_args()
    answers_path = args.answers
    if not answers_path:
        os.makedirs(args.work, exist_ok=True)
        pairs = write_sets(args.work, args.seed)
        answers_path = os.path.join(args.work, "low-score-answers.jsonl")
        subprocess.run([args.wayfinder, "eval", *pairs, "--out", answers_path], check=True,
                       stdout=subprocess.DEVNULL)
    all_rows = list(rows(read_lines([answers_path])))
    schemas = sorted({r[0] for r in all_rows})

    print("Leaving one schema out: the threshold fitted on the others, scored on it.")
    print("Each side: balanced accuracy, badly answered flagged, answered flagged, flags that were bad\n")
    names = ["BA", "bad flagged", "good flagged", "precision"]
    cells = " | ".join(names)
    at_current = " | ".join(f"{name} at {CURRENT}" for name in names)
    print(f"| schema | fitted | {cells} | {at_current} |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    held = []
    for schema in schemas:
        train = [r for r in all_rows if r[0] != schema]
        test = [r for r in all_rows if r[0] == schema]
        t = fit(train)
        held.append((t, test))
        print(f"| {schema} | {t:.2f} | {describe(tally(test, t))} | {describe(tally(test, CURRENT))} |")
    pooled_fitted = [sum(x) for x in zip(*(tally(test, t) for t, test in held))]
    print(f"| **pooled** | | {describe(pooled_fitted)} | {describe(tally(all_rows, CURRENT))} |")

    print("\nPer style, pooled over the held-out schemas:\n")
    print(f"| style | {cells} | {at_current} |")
    print("|---|---|---|---|---|---|---|---|---|")
    by_style = defaultdict(list)
    for t, test in held:
        for r in test:
            by_style[r[1]].append((t, r))
    for style, items in sorted(by_style.items()):
        fitted_t = [sum(x) for x in zip(*(tally([r], t) for t, r in items))]
        current = tally([r for _, r in items], CURRENT)
        print(f"| {style} | {describe(fitted_t)} | {describe(current)} |")

    final = fit(all_rows)
    print(f"\nFitted on all {len(schemas)} schemas ({len(all_rows)} questions): low_score = {final:.2f}")


if __name__ == "__main__":
    main()
