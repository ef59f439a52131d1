#!/usr/bin/env python3
"""Averages several tunings of the model (bench/fit/tune.py's folders) into one: a "soup".

    bench/fit/soup.py --out DIR TUNED_DIR TUNED_DIR [...]

Each tuning adds A B to a weight; their average, (A1 B1 + ... + An Bn) / n, is itself a low-rank
update: A = [A1 ... An] beside each other and B = [B1; ...; Bn] / n stacked, so the engine reads
the soup as it reads any tuning file (workers/src/embed/tuning.rs) and a text costs the same.
One tuning run's gain on a schema moves by about .05 R@5 from one run to the next (another seed,
another rank); their average keeps what they share.

Writes OUT/<name>.safetensors for every file name the folders have in common (each fold, and
`all`), with the model file the parts were fitted on (`base`, which they must share) and `soup`:
each part's path and settings.
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
        return tuning.metadata() or {}, {name: tuning.get_tensor(name) for name in tuning.keys()}


def soup(paths):
    """The metadata and tensors of the average of the tunings at `paths`."""
    parts = [read(path) for path in paths]
    metadata, first = parts[0]
    for path, (other, tensors) in zip(paths[1:], parts[1:]):
        if other.get("base") != metadata.get("base"):
            sys.exit(f"soup: {path} was fitted on model {other.get('base')}, {paths[0]} on {metadata.get('base')}")
        if tensors.keys() != first.keys():
            sys.exit(f"soup: {path} updates other weights than {paths[0]}")
    out = {}
    for name in first:
        if name.endswith(".a"):
            out[name] = np.concatenate([t[name].astype(np.float32) for _, t in parts], axis=1).astype(np.float16)
        else:
            stacked = np.concatenate([t[name].astype(np.float32) for _, t in parts], axis=0)
            out[name] = (stacked / len(parts)).astype(np.float16)
    settings = {path: {k: v for k, v in m.items() if k != "base"} for path, (m, _) in zip(paths, parts)}
    return {"base": metadata.get("base", ""), "soup": json.dumps(settings)}, out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("tuned", nargs="+", help="bench/fit/tune.py output folders")
    args = parser.parse_args()
    if len(args.tuned) < 2:
        sys.exit("soup: give at least two tuning folders")
    names = set.intersection(*({f for f in os.listdir(d) if f.endswith(".safetensors")} for d in args.tuned))
    if not names:
        sys.exit(f"soup: {', '.join(args.tuned)} have no tuning file name in common")
    os.makedirs(args.out, exist_ok=True)
    for name in sorted(names):
        metadata, tensors = soup([os.path.join(d, name) for d in args.tuned])
        save_file(tensors, os.path.join(args.out, name), metadata=metadata)
        rank = next(t.shape[1] for n, t in tensors.items() if n.endswith(".a"))
        print(f"soup: {name}: rank {rank}", flush=True)


if __name__ == "__main__":
    main()
