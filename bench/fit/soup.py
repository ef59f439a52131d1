#!/usr/bin/env python3
"""Averages several tunings of the model (bench/fit/tune.py's folders) into one: a "soup".

    bench/fit/soup.py --out DIR [--rank R] [--int8] TUNED_DIR TUNED_DIR [...]

Each tuning adds A B to a weight; their average, (A1 B1 + ... + An Bn) / n, is itself a low-rank
update: A = [A1 ... An] beside each other and B = [B1; ...; Bn] / n stacked, so the engine reads
the soup as it reads any tuning file (workers/src/embed/tuning.rs) and a text costs the same.
One tuning run's gain on a schema moves by about .05 R@5 from one run to the next (another seed,
another rank); their average keeps what they share. `--rank R` brings each weight's average
back to rank R, its best approximation there (the truncated SVD of the summed update), so the
file stays small when the parts' updates overlap. `--int8` writes the factors as int8 with one
scale per rank component (`<weight>.scale`, the update being A diag(scale) B): half the size of
f16 factors, a rounding far below the model's own int8 weights'.

Writes OUT/<name>.safetensors for every file name the folders have in common (each fold, and
`all`), with the model file the parts were fitted on (`base`, which they must share), `soup`:
each part's path and settings, and `rank` and `factors` when `--rank` and `--int8` are given.
"""

import argparse
import json
import os
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file


def read(path):
    with safe_open(path, "np") as tuning:
        metadata, tensors = tuning.metadata() or {}, {name: tuning.get_tensor(name) for name in tuning.keys()}
    if any(name.endswith(".scale") for name in tensors):
        sys.exit(f"soup: {path} holds int8 factors; average the f16 tunings they were made from")
    return metadata, tensors


def truncate(a, b, rank):
    """Factors of rank `rank` nearest A B, split evenly between them to stay within f16's range,
    and the share of A B's squared norm they keep."""
    u, s, vt = np.linalg.svd(a @ b, full_matrices=False)
    root = np.sqrt(s[:rank])
    return u[:, :rank] * root, root[:, None] * vt[:rank], float((s[:rank] ** 2).sum() / (s ** 2).sum())


def quantize(a, b):
    """Int8 factors and the scale per rank component such that A B = qa diag(scale) qb, each
    column of A and row of B rounded on its own largest value."""
    sa = np.abs(a).max(axis=0) / 127
    sb = np.abs(b).max(axis=1) / 127
    qa = np.round(a / np.where(sa > 0, sa, 1)).astype(np.int8)
    qb = np.round(b / np.where(sb > 0, sb, 1)[:, None]).astype(np.int8)
    return qa, qb, (sa * sb).astype(np.float32)


def soup(paths, rank=None, int8=False):
    """The metadata and tensors of the average of the tunings at `paths` (of rank `rank`, int8
    when `int8`), and the least share of a weight's update the truncation kept."""
    parts = [read(path) for path in paths]
    metadata, first = parts[0]
    for path, (other, tensors) in zip(paths[1:], parts[1:]):
        if other.get("base") != metadata.get("base"):
            sys.exit(f"soup: {path} was fitted on model {other.get('base')}, {paths[0]} on {metadata.get('base')}")
        if tensors.keys() != first.keys():
            sys.exit(f"soup: {path} updates other weights than {paths[0]}")
    out, kept = {}, 1.0
    for weight in (n[:-2] for n in first if n.endswith(".a")):
        a = np.concatenate([t[weight + ".a"].astype(np.float32) for _, t in parts], axis=1)
        b = np.concatenate([t[weight + ".b"].astype(np.float32) for _, t in parts], axis=0) / len(parts)
        if rank:
            if rank > a.shape[1]:
                sys.exit(f"soup: --rank {rank} is above the parts' rank together ({a.shape[1]})")
            a, b, share = truncate(a, b, rank)
            kept = min(kept, share)
        if int8:
            out[weight + ".a"], out[weight + ".b"], out[weight + ".scale"] = quantize(a, b)
        else:
            out[weight + ".a"], out[weight + ".b"] = a.astype(np.float16), b.astype(np.float16)
    settings = {path: {k: v for k, v in m.items() if k != "base"} for path, (m, _) in zip(paths, parts)}
    metadata = {"base": metadata.get("base", ""), "soup": json.dumps(settings)}
    if rank:
        metadata["rank"] = str(rank)
    if int8:
        metadata["factors"] = "int8"
    return metadata, out, kept


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rank", type=int, help="the rank to bring each averaged update back to")
    parser.add_argument("--int8", action="store_true", help="write int8 factors with a scale per rank component")
    parser.add_argument("tuned", nargs="+", help="bench/fit/tune.py output folders")
    args = parser.parse_args()
    if len(args.tuned) < 2:
        sys.exit("soup: give at least two tuning folders")
    names = set.intersection(*({f for f in os.listdir(d) if f.endswith(".safetensors")} for d in args.tuned))
    if not names:
        sys.exit(f"soup: {', '.join(args.tuned)} have no tuning file name in common")
    os.makedirs(args.out, exist_ok=True)
    for name in sorted(names):
        metadata, tensors, kept = soup([os.path.join(d, name) for d in args.tuned], args.rank, args.int8)
        save_file(tensors, os.path.join(args.out, name), metadata=metadata)
        rank = next(t.shape[1] for n, t in tensors.items() if n.endswith(".a"))
        kept = f", at least {kept:.4f} of each update's squared norm" if args.rank else ""
        print(f"soup: {name}: rank {rank}{kept}", flush=True)


if __name__ == "__main__":
    main()
