#!/usr/bin/env bash
# Builds the Go programs under tools/*/ (each a directory with its own go.mod) into a cache
# outside the repository and prints one line per program on stdout:
#
#   name=/abs/path/to/binary
#
# Usage: scripts/build-go-tools.sh [name ...]     (no names: every program under tools/)
#
# A binary lives at ${MESH_TOOLS_CACHE:-$HOME/.cache/mesh/tools}/<name>-<hash>/<name>, where the
# hash covers the program's files (tests and *.md excluded), its go.mod and go.sum, the Go version and
# the target platform; an existing binary is reused without building. go.mod and go.sum are
# kept complete in the repository, so no `go mod tidy` is needed here: modules come from the
# module proxy with GOFLAGS=-mod=mod. Build output goes to stderr.
#
# The cache is bounded: each use stamps the entry (.used), and older builds of the same program
# beyond the ${MESH_TOOLS_KEEP:-4} most recently used are removed, unless used within the last hour
# (another checkout may be running them).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${MESH_TOOLS_CACHE:-${HOME:?HOME is not set; set MESH_TOOLS_CACHE}/.cache/mesh/tools}"

if ! command -v go >/dev/null 2>&1; then
  echo "build-go-tools: the go command is not on PATH" >&2
  exit 1
fi

export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
# Bump when the way binaries are built changes, so old cache entries are not reused.
recipe="recipe=1 GOFLAGS=${GOFLAGS} CGO_ENABLED=${CGO_ENABLED} -trimpath"
toolchain="$(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"

# tool_hash DIR: a short digest of what the binary is made of.
tool_hash() {
  local dir="$1" rel
  {
    printf '%s\n%s\n' "$recipe" "$toolchain"
    while IFS= read -r -d '' rel; do
      printf '%s\0' "$rel"
      cat "$dir/$rel"
    done < <(cd "$dir" && find . -type f ! -name '*_test.go' ! -name '*.md' ! -path '*/testdata/*' ! -path '*/.*' -print0 | LC_ALL=C sort -z)
  } | sha256sum | cut -c1-16
}

# build_tool NAME: prints NAME=PATH, building the binary first unless the cache has it.
build_tool() {
  local name="$1" dir="$root/tools/$1"
  local out_dir bin hash started
  hash="$(tool_hash "$dir")"
  out_dir="$cache/$name-$hash"
  bin="$out_dir/$name"
  if [[ ! -x "$bin" ]]; then
    mkdir -p "$out_dir"
    # Test runs may call this from several processes at once: one builds, the others wait.
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$out_dir/.lock"
      flock 9
    fi
    if [[ ! -x "$bin" ]]; then
      started=$SECONDS
      echo "build-go-tools: building $name ($toolchain) ..." >&2
      (cd "$dir" && go build -trimpath -o "$bin.tmp.$$" .)
      mv -f "$bin.tmp.$$" "$bin"
      echo "build-go-tools: built $name in $((SECONDS - started))s" >&2
    fi
    if command -v flock >/dev/null 2>&1; then
      exec 9>&-
    fi
  fi
  touch "$out_dir/.used"
  prune_tool "$name" "$out_dir"
  printf '%s=%s\n' "$name" "$bin"
}

# prune_tool NAME KEEP_DIR: removes the least recently used builds of NAME beyond MESH_TOOLS_KEEP.
prune_tool() {
  local name="$1" current="$2" keep="${MESH_TOOLS_KEEP:-4}" n=0 dir
  while IFS= read -r dir; do
    [[ -z "$dir" || "$dir" == "$current" ]] && continue
    n=$((n + 1))
    (( n < keep )) && continue
    # in use by another checkout within the hour: keep it this time
    [[ -n "$(find "$dir" -maxdepth 1 -name .used -mmin -60 -print -quit 2>/dev/null)" ]] && continue
    rm -rf -- "$dir"
  done < <(for d in "$cache/$name"-????????????????/; do
    [[ -d "$d" ]] || continue
    d="${d%/}"
    printf '%s %s\n' "$(stat -c %Y "$d/.used" 2>/dev/null || stat -c %Y "$d")" "$d"
  done | sort -rn | cut -d' ' -f2-)
}

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
  for d in "$root"/tools/*/; do
    [[ -f "$d/go.mod" ]] && names+=("$(basename "$d")")
  done
fi

for name in "${names[@]}"; do
  if [[ ! -f "$root/tools/$name/go.mod" ]]; then
    echo "build-go-tools: no Go program tools/$name (no go.mod)" >&2
    exit 1
  fi
  build_tool "$name"
done
