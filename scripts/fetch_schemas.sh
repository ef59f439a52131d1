#!/usr/bin/env bash
# Fetches the public schemas of the team's own cross-schema question sets
# (bench/questions/SCHEMAS.md) from npm into <home>/schemas (default .wayfinder/schemas), checking
# the sha256 of each package and of each schema; idempotent (a schema present and intact is not
# fetched again). Needs npm, and node with graphql-js under tests/js (scripts/setup installs both).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-${WAYFINDER_HOME:-$root/.wayfinder}}/schemas"
mkdir -p "$dest"

intact() { [ -f "$1" ] && echo "$2  $1" | sha256sum -c --status; }

# name, package@version, tarball sha256, schema path in the tarball (or a folder for `build`),
# schema sha256, and how to make the schema: `copy` it, or `build` it with a script.
fetch() {
  local name=$1 spec=$2 tarball_sha=$3 path=$4 schema_sha=$5 how=$6
  local out="$dest/$name.graphql"
  if intact "$out" "$schema_sha"; then
    echo "schemas: $name present"
    return
  fi
  local tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
  local tgz
  tgz="$(ls "$tmp"/*.tgz)"
  if ! echo "$tarball_sha  $tgz" | sha256sum -c --status; then
    echo "schemas: error: $spec: the package's sha256 is not $tarball_sha" >&2
    exit 1
  fi
  tar xzf "$tgz" -C "$tmp"
  case "$how" in
    copy) cp "$tmp/$path" "$out.part" ;;
    build) node "$root/bench/questions/build_unchained.mjs" "$tmp/$path/" > "$out.part" ;;
  esac
  if ! intact "$out.part" "$schema_sha"; then
    rm -f "$out.part"
    echo "schemas: error: $name: the schema's sha256 is not $schema_sha" >&2
    exit 1
  fi
  mv "$out.part" "$out"
  echo "schemas: fetched $name from $spec"
}

fetch codex @codex-data/sdk@2.3.43 \
  cf8cf938adb53035691333e51778a16b94260a4f8ffb73401209d2c8f8b5a2f4 package/schema.graphql \
  fe7ef6fa09f2c3f903b67447288896477702c90cf97eaeafc0ca675b9f72da53 copy
fetch tribe @tribeplatform/gql-client@2.4.0 \
  2eeed3e69c2482f8a091744094617d51195ce3db2045dcf7c7ffe7d838babe21 package/schema.generated.gql \
  c046338de967abd8d8ec915a8120ae294a8cdb88cae089c8120fe1ae9c0c7882 copy
fetch unchained @unchainedshop/api@4.8.27 \
  1c200b7eca42aa6f74856294fbd3e6e71175472940d4fe1267f660f15229d3ec package/lib \
  40594e6c6548cdbd00944c9679f536a7de659667c6298a5b23e1cf2370aa9514 build
