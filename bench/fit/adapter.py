#!/usr/bin/env python3
"""Fits the question adapter: a matrix A that moves a question's vector toward the members
such questions ask for (workers/src/rank/adapter.rs applies it).

    bench/fit/adapter.py [--work DIR] [--out DIR] [--wayfinder BIN]

Reads the corpus questions bench/fit/run.py merged into DIR/questions-<schema>.jsonl, each
schema's member documents (`wayfinder catalog --documents`) and their vectors from the vector
cache that run made (.wayfinder/cache; a text missing there is an error: run run.py first), and
embeds the questions with the default model through ONNX Runtime as the engine does (the same
vectors: cosine 1.000 to the cached ones for the same text).

A = I + W; W minimises, over every question, the softmax cross-entropy of its expected members
(a task's several share the weight) among all members of its schema, each scored by
`TAU * (A q) . d` with d the member's document vector, plus `L2 * |W|^2`; Adam, seeded.
Writes OUT/<schema>.safetensors fitted without that schema (the leave-one-schema-out folds
run.py --adapters measures) and OUT/all.safetensors fitted on every schema (what ships beside
the ranker). Needs numpy, onnxruntime, tokenizers, lmdb, xxhash, safetensors
(bench/fit/requirements.txt).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import HOME, ROOT, corpus_sets  # noqa: E402

SEED = 20261128
# Chosen once; leave one schema out measures them (bench/HISTORY.md). The vector-only figures
# barely move between TAU 20 and 30, L2 1e-3 and 1e-2, 5 and 10 epochs.
TAU = 20.0
L2 = 1e-2
EPOCHS = 5
BATCH = 32
LEARNING_RATE = 1e-3
MODEL = os.path.join(HOME, "models", "all-MiniLM-L6-v2-int8")
# The engine's cache key of the default model file untuned (`wayfinder eval --model-tuning none`).
MODEL_KEY = 0x9E5E78DD41A8FE3D


def documents(wayfinder, schema):
    """(coordinates, texts) of every member's document, in catalog order."""
    out = subprocess.run([wayfinder, "catalog", schema, "--documents"], check=True,
                         capture_output=True, text=True).stdout
    pairs = [line.split("\t", 1) for line in out.splitlines() if "\t" in line]
    return [c for c, _ in pairs], [t for _, t in pairs]


def cached_vectors(env, texts, name):
    """The cached vector of each text (the engine's key: model key, xxh3-128 of the text)."""
    import xxhash
    vectors = []
    db = env.open_db(b"vectors")
    with env.begin() as txn:
        for text in texts:
            hash_ = xxhash.xxh3_128_intdigest(text.encode("utf-8"))
            value = txn.get(MODEL_KEY.to_bytes(8, "big") + hash_.to_bytes(16, "big"), db=db)
            if value is None:
                sys.exit(f"adapter: {name}: no cached vector for {text[:60]!r}: run bench/fit/run.py first")
            vectors.append(np.frombuffer(value, dtype="<f4"))
    matrix = np.stack(vectors).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def embed(texts):
    """Unit mean-pooled vectors of `texts` by the default model, one text a call."""
    import onnxruntime as ort
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
    # The engine tokenizes without the file's fixed padding to 128 and pools over real tokens:
    # a mean over the padding too gives vectors about .5 cosine from the engine's.
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(os.path.join(MODEL, "model.onnx"), options)
    inputs = {i.name for i in session.get_inputs()}
    vectors = []
    for text in texts:
        encoded = tokenizer.encode(text)
        ids = np.array([encoded.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.array([encoded.attention_mask], dtype=np.int64)}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        vector = session.run(None, feed)[0][0].mean(axis=0)
        vectors.append(vector / np.linalg.norm(vector))
    return np.stack(vectors).astype(np.float32)


def fit(items, vectors, members):
    """W for the (question index, schema, expected member indices) `items`."""
    dimension = vectors.shape[1]
    w = np.zeros((dimension, dimension), np.float32)
    m, v = np.zeros_like(w), np.zeros_like(w)
    rng = np.random.default_rng(SEED)
    by_schema = {}
    for item in items:
        by_schema.setdefault(item[1], []).append(item)
    step = 0
    for _ in range(EPOCHS):
        for name in rng.permutation(sorted(by_schema)):
            docs, questions = members[name], by_schema[name]
            order = rng.permutation(len(questions))
            for start in range(0, len(order), BATCH):
                batch = [questions[i] for i in order[start:start + BATCH]]
                q = vectors[[b[0] for b in batch]]
                scores = TAU * ((q + q @ w.T) @ docs.T)
                scores -= scores.max(axis=1, keepdims=True)
                p = np.exp(scores)
                p /= p.sum(axis=1, keepdims=True)
                for row, item in enumerate(batch):
                    p[row, item[2]] -= 1.0 / len(item[2])
                grad = (TAU * (p @ docs) / len(batch)).T @ q + L2 * w
                step += 1
                m = 0.9 * m + 0.1 * grad
                v = 0.999 * v + 0.001 * grad * grad
                w -= LEARNING_RATE * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    return w


def save(path, w):
    from safetensors.numpy import save_file
    save_file({"question": (np.eye(w.shape[0], dtype=np.float32) + w).astype(np.float32)}, path)


def recall_at(items, vectors, members, w, k=5):
    hits = []
    for qi, name, expected, _ in items:
        q = vectors[qi] + w @ vectors[qi]
        scores = members[name] @ q
        best = min(int((scores > scores[j]).sum()) for j in expected)
        hits.append(best < k)
    return float(np.mean(hits)) if hits else 0.0


def load_corpus(work, wayfinder):
    """Each schema's document texts, and the corpus questions with the indices of the members
    each asks for: (texts by schema, items (question index, schema, expected, style), question
    texts)."""
    texts, questions, items = {}, [], []
    for name, schema, _ in corpus_sets(set()):
        coordinates, texts[name] = documents(wayfinder, schema)
        place = {c: i for i, c in enumerate(coordinates)}
        with open(os.path.join(work, f"questions-{name}.jsonl"), encoding="utf-8") as lines:
            for line in lines:
                q = json.loads(line)
                expected = [place[c] for c in q["expected"] if c in place]
                if expected:
                    style = q.get("style") or ("action" if q.get("kind") == "mutation" else "question")
                    items.append((len(questions), name, expected, style))
                    questions.append(q["query"])
        print(f"adapter: {name}: {len(coordinates)} members", file=sys.stderr)
    return texts, items, questions


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "fit"))
    parser.add_argument("--out", default=os.path.join(ROOT, "target", "fit", "adapters"))
    parser.add_argument("--wayfinder", default=os.path.join(ROOT, "target", "release", "wayfinder"))
    args = parser.parse_args()
    texts, items, questions = load_corpus(args.work, args.wayfinder)
    import lmdb
    env = lmdb.open(os.path.join(HOME, "cache", "vectors.lmdb"), readonly=True, lock=False, max_dbs=8)
    members = {name: cached_vectors(env, t, name) for name, t in texts.items()}
    vectors = embed(questions)
    os.makedirs(args.out, exist_ok=True)
    zero = np.zeros((vectors.shape[1], vectors.shape[1]), np.float32)
    for name in members:
        w = fit([i for i in items if i[1] != name], vectors, members)
        save(os.path.join(args.out, f"{name}.safetensors"), w)
        held = [i for i in items if i[1] == name]
        print(f"adapter: without {name}: its text-view R@5 {recall_at(held, vectors, members, zero):.3f}"
              f" -> {recall_at(held, vectors, members, w):.3f}", flush=True)
    save(os.path.join(args.out, "all.safetensors"), fit(items, vectors, members))


if __name__ == "__main__":
    main()
