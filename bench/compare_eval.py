#!/usr/bin/env python3
"""What moved between two `wayfinder eval --out` files: each question whose answer's rank
changed, with its kind and words, then how many entered or left the top one, five and ten.

    python3 bench/compare_eval.py BEFORE.jsonl AFTER.jsonl QUESTIONS.jsonl [QUESTIONS.jsonl ...]

The questions files give each id its kind and words (the dev sets under ../shared/eval/questions
or ours under bench/corpus/questions); a rank is the first expected coordinate's within the first 100
(`deep_rank`), `-` beyond. Exits 1 when the two files do not hold the same questions.
"""

import json
import sys


def read_jsonl(path):
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def shown(rank):
    return "-" if rank is None else str(rank)


def within(rank, k):
    return rank is not None and rank <= k


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    before = {r["id"]: r["deep_rank"] for r in read_jsonl(argv[1])}
    after = {r["id"]: r["deep_rank"] for r in read_jsonl(argv[2])}
    if before.keys() != after.keys():
        missing = sorted(before.keys() ^ after.keys())
        print(f"the two files hold different questions: {', '.join(missing[:10])}", file=sys.stderr)
        return 1
    questions = {q["id"]: q for path in argv[3:] for q in read_jsonl(path)}

    moved = [i for i in before if before[i] != after[i]]
    for i in moved:
        q = questions.get(i, {})
        print(f"{shown(before[i]):>4} -> {shown(after[i]):<4} {i:<10} {q.get('kind', '?'):<18} {q.get('query', '?')}")

    for k in (1, 5, 10):
        entered = sum(1 for i in moved if within(after[i], k) and not within(before[i], k))
        left = sum(1 for i in moved if within(before[i], k) and not within(after[i], k))
        print(f"top {k}: {entered} entered, {left} left")
    print(f"{len(moved)} of {len(before)} questions moved")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
