#!/usr/bin/env python3
"""Tunes the default embedding model on the question corpus: low-rank updates (LoRA) of every
linear layer of all-MiniLM-L6-v2, fitted so a question's vector is nearest its members' documents.

    bench/fit/tune.py [--work DIR] [--out DIR] [--folds a,b|all|none] [--no-all]
                      [--set NAME=VALUE] [--wayfinder BIN]

Reads what bench/fit/run.py wrote into DIR (the corpus questions merged per schema) and each
schema's member documents (`wayfinder catalog --documents`), which it embeds with the untuned
model for the hard negatives (the members the untuned model puts nearest a question, not asked
for; kept in DIR, so the next run with the same model and corpus reads them). Both the questions
and the documents go through the model being tuned (the engine embeds both).

Each step takes BATCH questions of one schema, their asked-for members and NEGATIVES hard
negatives each, and minimises the softmax cross-entropy of each question's member among the
batch's documents (scaled by TAU); Adam on the LoRA factors only, the model's own weights fixed;
seeded.

Writes OUT/<schema>.safetensors fitted without that schema (run.py --models measures each
schema with its fold, through `wayfinder eval --model-tuning`: the engine adds the factors to
the model as it loads it, workers/src/embed/tuning.rs) and OUT/all.safetensors fitted on every
schema: what ships (workers/src/embed/fitted/). Needs numpy, jax, onnx, onnxruntime, tokenizers,
xxhash, safetensors (requirements.txt).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit import set_values  # noqa: E402
from run import HOME, ROOT, corpus_sets  # noqa: E402

SEED = 20261128
# Chosen once on three schemas left out together (spotify, otp, sui: text-view R@5 .529/.488/.636
# untuned, .782/.632/.802 after one epoch); leave one schema out measures them.
RANK = 8
EPOCHS = 1
BATCH = 16
LEARNING_RATE = 5e-4
TAU = 20.0
HARD = 20
# Hard negatives drawn for each question of a step (of its HARD nearest, with replacement).
NEGATIVES = 1
# What `--set` may change, to measure one value leaving schemas out.
SETTINGS = ("RANK", "EPOCHS", "BATCH", "LEARNING_RATE", "TAU", "HARD", "NEGATIVES", "SEED")
QUESTION_TOKENS = 32
DOCUMENT_TOKENS = 48
# A member's document as the engine embeds it (its max_tokens) when the recall is measured.
ENGINE_TOKENS = 256
HEADS = 12
MODEL = os.path.join(HOME, "models", "all-MiniLM-L6-v2-int8")
LINEAR = ("attention.self.query", "attention.self.key", "attention.self.value",
          "attention.output.dense", "intermediate.dense", "output.dense")


def documents(wayfinder, schema):
    """(coordinates, texts) of every member's document, in catalog order."""
    out = subprocess.run([wayfinder, "catalog", schema, "--documents"], check=True,
                         capture_output=True, text=True).stdout
    pairs = [line.split("\t", 1) for line in out.splitlines() if "\t" in line]
    return [c for c, _ in pairs], [t for _, t in pairs]


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


def load_corpus(work, wayfinder):
    """Each schema's document texts, and the corpus questions with the indices of the members
    each asks for: (texts by schema, items (question index, schema, expected), question texts)."""
    texts, questions, items = {}, [], []
    for name, schema, _ in corpus_sets(set()):
        coordinates, texts[name] = documents(wayfinder, schema)
        place = {c: i for i, c in enumerate(coordinates)}
        with open(os.path.join(work, f"questions-{name}.jsonl"), encoding="utf-8") as lines:
            for line in lines:
                q = json.loads(line)
                expected = [place[c] for c in q["expected"] if c in place]
                if expected:
                    items.append((len(questions), name, expected))
                    questions.append(q["query"])
        print(f"tune: {name}: {len(coordinates)} members", file=sys.stderr)
    return texts, items, questions


def graph_weights(model):
    """{bert name: (its int8 initializer's name, float weight [in, out])} of every linear layer,
    and the float embeddings and norms, read from the base model's int8 graph."""
    from onnx import numpy_helper
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    dequantized = {}
    for node in model.graph.node:
        if node.op_type == "Mul" and node.input[0].endswith("_f") and node.input[1].endswith("_scale"):
            base = node.input[0][:-2]
            dequantized[node.output[0]] = (base + "_q", init[base + "_q"].astype(np.float32) * init[base + "_scale"])
    consumers = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    linear, plain = {}, {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in dequantized:
            add = next(c for c in consumers[node.output[0]] if c.op_type == "Add")
            bias = next(i for i in add.input if i in init)
            linear[bias.removeprefix("inner.").removesuffix(".bias")] = dequantized[node.input[1]]
    for name, value in init.items():
        if name.startswith("inner.") and value.dtype == np.float32 and not name.endswith("_scale"):
            plain[name.removeprefix("inner.")] = value
    for name in ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight"):
        plain[name] = dequantized["inner." + name][1]
    return linear, plain


def forward(weights, lora, ids, mask):
    """Unit mean-pooled vectors, as the engine computes them (post-norm BERT, exact GELU)."""
    import jax
    import jax.numpy as jnp

    def norm(x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-12) * weights[name + ".weight"] + weights[name + ".bias"]

    def dense(x, name):
        y = x @ weights[name + ".weight"] + weights[name + ".bias"]
        if name in lora:
            a, b = lora[name]
            y = y + (x @ a) @ b
        return y

    length = ids.shape[1]
    x = (weights["embeddings.word_embeddings.weight"][ids]
         + weights["embeddings.position_embeddings.weight"][:length][None]
         + weights["embeddings.token_type_embeddings.weight"][0])
    x = norm(x, "embeddings.LayerNorm")
    masked = (1.0 - mask[:, None, None, :].astype(jnp.float32)) * -1e9
    layer = 0
    while f"encoder.layer.{layer}.attention.self.query.weight" in weights:
        pre = f"encoder.layer.{layer}."
        batch, _, width = x.shape
        split = lambda y: y.reshape(batch, length, HEADS, width // HEADS).transpose(0, 2, 1, 3)
        q, k, v = (split(dense(x, pre + name)) for name in LINEAR[:3])
        attention = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(width // HEADS) + masked, axis=-1)
        context = (attention @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
        x = norm(x + dense(context, pre + LINEAR[3]), pre + "attention.output.LayerNorm")
        hidden = jax.nn.gelu(dense(x, pre + LINEAR[4]), approximate=False)
        x = norm(x + dense(hidden, pre + LINEAR[5]), pre + "output.LayerNorm")
        layer += 1
    m = mask[:, :, None].astype(jnp.float32)
    pooled = (x * m).sum(1) / jnp.maximum(m.sum(1), 1.0)
    return pooled / jnp.linalg.norm(pooled, axis=-1, keepdims=True)


class Tuner:
    def __init__(self, args):
        import jax
        import jax.numpy as jnp
        import onnx
        from tokenizers import Tokenizer

        self.jax, self.jnp = jax, jnp
        self.tokenizer = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
        self.tokenizer.no_padding()
        linear, plain = graph_weights(onnx.load(os.path.join(MODEL, "model.onnx")))
        self.weights = {k: jnp.asarray(v) for k, v in plain.items()}
        for name, (_, w) in linear.items():
            self.weights[name + ".weight"] = jnp.asarray(w)
        self.linear = sorted(linear)
        self.int8_names = {name: weight for name, (weight, _) in linear.items()}
        self.texts, self.items, questions = load_corpus(args.work, args.wayfinder)
        self.questions = questions
        self.step = jax.jit(jax.value_and_grad(self._loss))
        self.embed_fn = jax.jit(lambda lora, ids, mask: forward(self.weights, lora, ids, mask))
        self.base = self.untuned_documents(args.work)
        vectors = embed(questions)
        self.hard = {}
        for qi, name, expected in self.items:
            scores = self.base[name] @ vectors[qi]
            scores[expected] = -np.inf
            self.hard[qi] = np.argsort(-scores)[:HARD]
        self.base_questions = vectors

    def untuned_documents(self, work):
        """The untuned model's document vectors by schema: made here (the engine's vector cache may
        have pruned them) once for a model and a corpus, then read from the work folder."""
        import xxhash
        key = xxhash.xxh3_64(model_hash(os.path.join(MODEL, "model.onnx")).encode())
        for name in sorted(self.texts):
            key.update(json.dumps([name, self.texts[name], ENGINE_TOKENS]).encode())
        path = os.path.join(work, f"untuned-{key.hexdigest()}.npz")
        if os.path.exists(path):
            with np.load(path) as saved:
                return {name: saved[name] for name in self.texts}
        base = {name: self.vectors({}, texts) for name, texts in self.texts.items()}
        with open(path + ".part", "wb") as out:  # a stopped run leaves no half-written file
            np.savez(out, **base)
        os.replace(path + ".part", path)
        return base

    def encode(self, texts, length):
        ids = np.zeros((len(texts), length), np.int32)
        mask = np.zeros((len(texts), length), np.int32)
        for row, text in enumerate(texts):
            tokens = self.tokenizer.encode(text).ids[:length]
            if len(tokens) == length:
                tokens[-1] = 102  # [SEP] ends a truncated text, as the tokenizer's own truncation does
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        return ids, mask

    def _loss(self, lora, qi, qm, di, dm):
        jax, jnp = self.jax, self.jnp
        q = forward(self.weights, lora, qi, qm)
        d = forward(self.weights, lora, di, dm)
        scores = TAU * q @ d.T
        return -jnp.mean(jnp.diagonal(jax.nn.log_softmax(scores, axis=1)))

    def fit(self, without):
        """LoRA factors fitted on every schema but `without`."""
        jax, jnp = self.jax, self.jnp
        rng = np.random.default_rng(SEED)
        lora = {}
        for name in self.linear:
            w = self.weights[name + ".weight"]
            lora[name] = (jnp.asarray(rng.normal(0, 1 / np.sqrt(w.shape[0]), (w.shape[0], RANK)).astype(np.float32)),
                          jnp.zeros((RANK, w.shape[1]), jnp.float32))
        m = jax.tree_util.tree_map(jnp.zeros_like, lora)
        v = jax.tree_util.tree_map(jnp.zeros_like, lora)
        by_schema = {}
        for item in self.items:
            if item[1] != without:
                by_schema.setdefault(item[1], []).append(item)
        step, started = 0, time.time()
        for _ in range(EPOCHS):
            batches = []
            for name in sorted(by_schema):
                items = by_schema[name]
                order = rng.permutation(len(items))
                batches += [[items[i] for i in order[s:s + BATCH]] for s in range(0, len(order) - BATCH + 1, BATCH)]
            for b in rng.permutation(len(batches)):
                batch = batches[b]
                name = batch[0][1]
                asked = [int(rng.choice(item[2])) for item in batch]
                negatives = [int(j) for item in batch
                             for j in rng.choice(self.hard[item[0]], NEGATIVES)]
                qi, qm = self.encode([self.questions[item[0]] for item in batch], QUESTION_TOKENS)
                di, dm = self.encode([self.texts[name][j] for j in asked + negatives], DOCUMENT_TOKENS)
                loss, grad = self.step(lora, qi, qm, di, dm)
                step += 1
                m = jax.tree_util.tree_map(lambda a, g: 0.9 * a + 0.1 * g, m, grad)
                v = jax.tree_util.tree_map(lambda a, g: 0.999 * a + 0.001 * g * g, v, grad)
                lora = jax.tree_util.tree_map(
                    lambda p, a, b: p - LEARNING_RATE * (a / (1 - 0.9 ** step)) / (jnp.sqrt(b / (1 - 0.999 ** step)) + 1e-8),
                    lora, m, v)
        print(f"tune: without {without or 'none'}: {step} steps, {time.time() - started:.0f} s", file=sys.stderr, flush=True)
        return {name: (np.asarray(a), np.asarray(b)) for name, (a, b) in lora.items()}

    def vectors(self, lora, texts, limit=ENGINE_TOKENS, batch=64):
        """Unit vectors of `texts` (bucketed by length to bound padding)."""
        lengths = [min(len(self.tokenizer.encode(t).ids), limit) for t in texts]
        order = np.argsort(lengths, kind="stable")
        out = np.zeros((len(texts), self.weights["embeddings.LayerNorm.weight"].shape[0]), np.float32)
        jl = {k: (self.jnp.asarray(a), self.jnp.asarray(b)) for k, (a, b) in lora.items()}
        for start in range(0, len(texts), batch):
            rows = order[start:start + batch]
            length = int(-(-max(lengths[i] for i in rows) // 16) * 16)
            chunk = [texts[i] for i in rows]
            ids, mask = self.encode(chunk + [""] * (batch - len(chunk)), length)
            out[rows] = np.asarray(self.embed_fn(jl, ids, mask))[:len(chunk)]
        return out

    def recall(self, lora, name, k=5):
        """Text-view R@5 of `name`'s questions, untuned and tuned."""
        held = [item for item in self.items if item[1] == name]
        tuned_docs = self.vectors(lora, self.texts[name])
        tuned_questions = self.vectors(lora, [self.questions[item[0]] for item in held], QUESTION_TOKENS)
        out = []
        for docs, questions in ((self.base[name], self.base_questions[[item[0] for item in held]]),
                                (tuned_docs, tuned_questions)):
            hits = []
            for row, (_, _, expected) in enumerate(held):
                scores = docs @ questions[row]
                hits.append(min(int((scores > scores[j]).sum()) for j in expected) < k)
            out.append(float(np.mean(hits)))
        return out


def model_hash(path):
    """The hash a tuning's `base` names its model file by (workers/src/embed/tuning.rs)."""
    import xxhash
    with open(path, "rb") as f:
        return f"{xxhash.xxh3_64_intdigest(f.read()):016x}"


def save_lora(path, lora, int8_names):
    """The factors, f16, by the int8 weight each updates (the engine's tuning file), with the
    model file they were fitted on."""
    from safetensors.numpy import save_file
    tensors = {}
    for name, (a, b) in lora.items():
        tensors[int8_names[name] + ".a"] = a.astype(np.float16)
        tensors[int8_names[name] + ".b"] = b.astype(np.float16)
    base = model_hash(os.path.join(MODEL, "model.onnx"))
    settings = {name.lower(): str(globals()[name]) for name in SETTINGS}
    save_file(tensors, path, metadata={"base": base, **settings})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "fit"))
    parser.add_argument("--out", default=os.path.join(ROOT, "target", "fit", "tuned"))
    parser.add_argument("--folds", default="all", help="schemas to leave out one by one: a,b | all | none")
    parser.add_argument("--wayfinder", default=os.path.join(ROOT, "target", "release", "wayfinder"))
    parser.add_argument("--no-recall", action="store_true",
                        help="skip each fold's text-view R@5 (embedding the left-out schema's documents)")
    parser.add_argument("--no-all", action="store_true", help="fit the folds only, not all.safetensors")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help=f"another value for one of the settings ({', '.join(SETTINGS)}), to measure it")
    args = parser.parse_args()
    settings = {name: globals()[name] for name in SETTINGS}
    set_values(settings, args.set)
    globals().update(settings)
    tuner = Tuner(args)
    os.makedirs(args.out, exist_ok=True)
    schemas = sorted({item[1] for item in tuner.items})
    folds = schemas if args.folds == "all" else [] if args.folds == "none" else args.folds.split(",")
    for name in folds:
        lora = tuner.fit(name)
        save_lora(os.path.join(args.out, f"{name}.safetensors"), lora, tuner.int8_names)
        if not args.no_recall:
            before, after = tuner.recall(lora, name)
            print(f"tune: without {name}: its text-view R@5 {before:.3f} -> {after:.3f}", flush=True)
    if not args.no_all:
        save_lora(os.path.join(args.out, "all.safetensors"), tuner.fit(""), tuner.int8_names)


if __name__ == "__main__":
    main()
