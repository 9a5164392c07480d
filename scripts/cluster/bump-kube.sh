#!/usr/bin/env bash
# Moves tools/cluster/kube to another Kubernetes release: requires k8s.io/kubernetes VERSION and
# pins every staging module that release replaces (k8s.io/api, k8s.io/client-go, ...) to the
# matching v0.X.Y, then runs go mod tidy. Review and commit go.mod and go.sum afterwards.
#
# Usage: scripts/cluster/bump-kube.sh v1.37.2
set -euo pipefail
# shellcheck source=scripts/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

version="${1:-}"
[[ "$version" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || cluster_die "usage: scripts/cluster/bump-kube.sh v1.<minor>.<patch>"
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
dir="$cluster_tools/kube"

# The release's own go.mod lists its staging modules as replace lines (=> ./staging/src/...).
gomod="$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "$gomod" ]] || cluster_die "could not fetch k8s.io/kubernetes@$version"
mapfile -t modules < <(sed -n '/^replace (/,/^)/p' "$gomod" | awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }')
[[ ${#modules[@]} -gt 0 ]] || cluster_die "k8s.io/kubernetes@$version lists no staging modules"

cd "$dir"
go mod edit -require="k8s.io/kubernetes@$version"
for m in "${modules[@]}"; do
  go mod edit -replace="$m=$m@$staging"
done
go mod tidy
cluster_log "tools/cluster/kube now builds Kubernetes $version with ${#modules[@]} staging modules at $staging"
