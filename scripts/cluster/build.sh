#!/usr/bin/env bash
# Builds the local control plane's programs with this machine's Go toolchain from the Go module
# proxy, into a cache outside the repository, and prints one line per program on stdout:
#
#   name=/abs/path/to/binary
#
# Usage: scripts/cluster/build.sh [program ...]   (default: every program below)
#
# Programs and the wrapper module (tools/cluster/<dir>/go.mod) each comes from:
#   kube-apiserver kube-controller-manager kube-scheduler kubectl   tools/cluster/kube
#   etcd                                                            tools/cluster/etcd
#   kwok                                                            tools/cluster/kwok
#
# Cache layout: ${MESH_TOOLS_CACHE:-~/.cache/mesh/tools}/<group>-<version>-<hash>/<program>, e.g.
# k8s-v1.37.2-0123abcd4567ef89/kube-apiserver, where <version> is the release the wrapper module
# requires and <hash> covers its go.mod and go.sum, the build recipe and the Go toolchain. An existing
# binary is reused without building. go.mod and go.sum are complete in the repository (no tidy here).
set -euo pipefail
# shellcheck source=scripts/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v go >/dev/null 2>&1 || cluster_die "the go command is not on PATH (nor /usr/local/go/bin/go)"

export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0
# Bump when the way binaries are built changes, so old cache entries are not reused.
recipe="recipe=1 GOFLAGS=${GOFLAGS} CGO_ENABLED=${CGO_ENABLED} -trimpath -ldflags=-s -w"
toolchain="$(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"

all_programs=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)

# program_info NAME: sets module_dir, group, version, pkg and ldflags for a program.
program_info() {
  case "$1" in
    kube-apiserver | kube-controller-manager | kube-scheduler | kubectl)
      module_dir="$cluster_tools/kube"
      group=k8s
      version="$(module_version "$module_dir" k8s.io/kubernetes)"
      pkg="k8s.io/kubernetes/cmd/$1"
      local minor="${version#v1.}"
      minor="${minor%%.*}"
      # What /version reports and what clients send as their user agent.
      local x=""
      for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        x+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
      done
      ldflags="-s -w$x"
      ;;
    etcd)
      module_dir="$cluster_tools/etcd"
      group=etcd
      version="$(module_version "$module_dir" go.etcd.io/etcd/server/v3)"
      pkg="go.etcd.io/etcd/server/v3"
      ldflags="-s -w"
      ;;
    kwok)
      module_dir="$cluster_tools/kwok"
      group=kwok
      version="$(module_version "$module_dir" sigs.k8s.io/kwok)"
      pkg="sigs.k8s.io/kwok/cmd/kwok"
      ldflags="-s -w"
      ;;
    *) cluster_die "unknown program '$1' (known: ${all_programs[*]})" ;;
  esac
}

group_hash() {
  { printf '%s\n%s\n' "$recipe" "$toolchain"; cat "$1/go.mod" "$1/go.sum"; } | sha256sum | cut -c1-16
}

build_program() {
  local name="$1" module_dir group version pkg ldflags out_dir bin started
  program_info "$name"
  out_dir="$cluster_cache/$group-$version-$(group_hash "$module_dir")"
  bin="$out_dir/$name"
  if [[ ! -x "$bin" ]]; then
    mkdir -p "$out_dir"
    # Several test processes may ask at once: one builds, the others wait for it.
    exec 9>"$out_dir/.lock-$name"
    flock 9
    if [[ ! -x "$bin" ]]; then
      started=$SECONDS
      cluster_log "building $name $version ($toolchain); a first build takes minutes ..."
      (cd "$module_dir" && go build -trimpath -ldflags "$ldflags" -o "$bin.tmp.$$" "$pkg")
      mv -f "$bin.tmp.$$" "$bin"
      cluster_log "built $name in $((SECONDS - started))s"
    fi
    exec 9>&-
  fi
  printf '%s=%s\n' "$name" "$bin"
}

programs=("$@")
[[ ${#programs[@]} -gt 0 ]] || programs=("${all_programs[@]}")
for p in "${programs[@]}"; do
  build_program "$p"
done
