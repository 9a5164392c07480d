#!/usr/bin/env bash
# Runs the end-to-end suites against a kind cluster instead of the local control plane, for
# people who have a Docker engine (see README.md beside this file).
#
# Usage: e2e/kind/run.sh [jest arguments]     (default: e2e)
# Environment:
#   KIND_CLUSTER_NAME  cluster name (default mesh-e2e)
#   KIND_NODE_IMAGE    node image (default: kind's own default for its version)
#   KIND_KEEP=1        keep the cluster afterwards (it is reused by the next run)
#   KIND               a kind binary to use; otherwise one on PATH, otherwise one built with Go
#                      into ${MESH_TOOLS_CACHE:-~/.cache/mesh/tools}/kind-<version>/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

name="${KIND_CLUSTER_NAME:-mesh-e2e}"
kind_version=v0.33.0
cache="${MESH_TOOLS_CACHE:-${HOME:?HOME is not set; set MESH_TOOLS_CACHE}/.cache/mesh/tools}"
state="${MESH_E2E_KIND_DIR:-${HOME}/.cache/mesh/kind-$name}"

die() { printf 'e2e/kind: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'e2e/kind: %s\n' "$*" >&2; }

command -v docker >/dev/null 2>&1 || die "docker is not installed; use the local control plane instead (npm run cluster:up)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); use the local control plane instead (npm run cluster:up)"

kind="${KIND:-}"
if [[ -z "$kind" ]]; then
  if command -v kind >/dev/null 2>&1; then
    kind="$(command -v kind)"
  else
    command -v go >/dev/null 2>&1 || [[ -x /usr/local/go/bin/go ]] || die "neither kind nor go is on PATH"
    command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"
    kind="$cache/kind-$kind_version/kind"
    if [[ ! -x "$kind" ]]; then
      log "building kind $kind_version with $(go env GOVERSION) ..."
      GOBIN="$cache/kind-$kind_version" CGO_ENABLED=0 GOFLAGS=-trimpath go install "sigs.k8s.io/kind@$kind_version"
    fi
  fi
fi
log "using $kind ($("$kind" version 2>/dev/null || echo 'version unknown'))"

mkdir -p "$state"
kubeconfig="$state/kubeconfig"
if "$kind" get clusters 2>/dev/null | grep -qx "$name"; then
  log "reusing kind cluster $name"
else
  args=(create cluster --name "$name" --kubeconfig "$kubeconfig" --wait 180s)
  [[ -n "${KIND_NODE_IMAGE:-}" ]] && args+=(--image "$KIND_NODE_IMAGE")
  log "creating kind cluster $name ..."
  "$kind" "${args[@]}"
fi
"$kind" get kubeconfig --name "$name" >"$kubeconfig.tmp"
chmod 600 "$kubeconfig.tmp"
mv -f "$kubeconfig.tmp" "$kubeconfig"
log "kubeconfig: $kubeconfig"

cleanup() {
  if [[ "${KIND_KEEP:-}" == 1 ]]; then
    log "keeping kind cluster $name (KIND_KEEP=1); delete it with: $kind delete cluster --name $name"
  else
    "$kind" delete cluster --name "$name" >&2 || true
    rm -rf "$state"
  fi
}
trap cleanup EXIT

# The suites read MESH_E2E_KUBECONFIG (test/support/cluster.ts): with it set they use this cluster
# and start no local control plane.
export KUBECONFIG="$kubeconfig"
export MESH_E2E_KUBECONFIG="$kubeconfig"
[[ -f dist/cli/mesh-discovery.js ]] || npm run build
[[ $# -gt 0 ]] || set -- e2e
npm test -- "$@"
