#!/usr/bin/env bash
# Builds the project's images with docker or podman and, with --kind, loads them into a kind cluster:
#
#   <hub>/meshd:<tag>      images/meshd.Dockerfile     the daemon mesh-discovery
#   <hub>/operator:<tag>   images/operator.Dockerfile  the operator controller mesh-operator
#   <hub>/proxy:<tag>      images/proxy.Dockerfile     Envoy plus the agent mesh-agent
#
# (first <hub>/mesh-build:<tag>, images/build.Dockerfile: the repository built once for all three).
# These are the names `meshctl install --set hub=<hub> --set tag=<tag>` and `meshctl operator dump
# --hub <hub> --tag <tag>` render, so a cluster that has the images runs them as they are.
#
#   scripts/images.sh [--hub <hub>] [--tag <tag>] [--kind <cluster>] [--push] [--engine docker|podman]
#                     [--node-image <ref>] [--envoy-image <ref>] [--dry-run]
#
#   --hub          registry and path (default docker.io/meshproject)
#   --tag          default: the version in package.json
#   --kind         after building, load the images into the kind cluster of that name
#   --push         push the three images to <hub>
#   --engine       docker or podman (default: docker if found, else podman)
#   --node-image   base image with the pinned Node runtime (default node:24.21.0-bookworm-slim);
#   --envoy-image  Envoy base of the proxy image (default envoyproxy/envoy:v1.36.0);
#                  give either as name:tag@sha256:<digest> to pin the digest
#   --dry-run      print the commands instead of running them (no engine needed)
#
# Exits 2 for a usage error, 3 when no container engine (or kind, with --kind) is installed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

hub="docker.io/meshproject"
tag=""
kind_cluster=""
push=false
engine=""
node_image="node:24.21.0-bookworm-slim"
envoy_image="envoyproxy/envoy:v1.36.0"
dry_run=false
IMAGES=(meshd operator proxy)

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; }
need_value() { [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || { echo "images: $1 needs a value" >&2; exit 2; }; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --hub) need_value "$@"; hub="$2"; shift 2 ;;
    --tag) need_value "$@"; tag="$2"; shift 2 ;;
    --kind) need_value "$@"; kind_cluster="$2"; shift 2 ;;
    --push) push=true; shift ;;
    --engine) need_value "$@"; engine="$2"; shift 2 ;;
    --node-image) need_value "$@"; node_image="$2"; shift 2 ;;
    --envoy-image) need_value "$@"; envoy_image="$2"; shift 2 ;;
    --dry-run) dry_run=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "images: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [[ -z "$tag" ]]; then
  tag="$(sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$root/package.json" | head -n1)"
fi
[[ "$hub" =~ ^[a-z0-9]([a-z0-9._:/-]*[a-z0-9])?$ ]] || { echo "images: --hub \"$hub\" is not a registry path" >&2; exit 2; }
[[ "$tag" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || { echo "images: --tag \"$tag\" is not an image tag" >&2; exit 2; }

if [[ -z "$engine" ]]; then
  if command -v docker >/dev/null 2>&1; then engine=docker
  elif command -v podman >/dev/null 2>&1; then engine=podman
  elif $dry_run; then engine=docker
  else
    echo "images: no container engine found: install docker or podman (or pass --engine), then run this again" >&2
    exit 3
  fi
fi
case "$engine" in docker|podman) ;; *) echo "images: --engine must be docker or podman, not \"$engine\"" >&2; exit 2 ;; esac
if ! $dry_run && ! command -v "$engine" >/dev/null 2>&1; then
  echo "images: $engine is not installed: install it, or pass --engine with the one you have" >&2
  exit 3
fi
if [[ -n "$kind_cluster" ]] && ! $dry_run && ! command -v kind >/dev/null 2>&1; then
  echo "images: --kind needs the kind command: install kind (https://kind.sigs.k8s.io), then run this again" >&2
  exit 3
fi

run() {
  echo "+ $*"
  $dry_run || "$@"
}

build_image="$hub/mesh-build:$tag"
run "$engine" build -f "$root/images/build.Dockerfile" --build-arg "NODE_IMAGE=$node_image" -t "$build_image" "$root"
for image in "${IMAGES[@]}"; do
  args=(--build-arg "BUILD_IMAGE=$build_image" --build-arg "NODE_IMAGE=$node_image")
  [[ "$image" == proxy ]] && args+=(--build-arg "ENVOY_IMAGE=$envoy_image")
  run "$engine" build -f "$root/images/$image.Dockerfile" "${args[@]}" -t "$hub/$image:$tag" "$root"
done

if $push; then
  for image in "${IMAGES[@]}"; do run "$engine" push "$hub/$image:$tag"; done
fi

if [[ -n "$kind_cluster" ]]; then
  for image in "${IMAGES[@]}"; do
    if [[ "$engine" == docker ]]; then
      run kind load docker-image --name "$kind_cluster" "$hub/$image:$tag"
    else
      # kind reads docker's image store; from podman, go through an archive
      archive="$(mktemp -t "mesh-$image-XXXXXX.tar")"
      run podman save -o "$archive" "$hub/$image:$tag"
      run kind load image-archive --name "$kind_cluster" "$archive"
      $dry_run || rm -f "$archive"
    fi
  done
fi

echo "images: $hub/{meshd,operator,proxy}:$tag$([[ -n "$kind_cluster" ]] && echo " loaded into kind cluster $kind_cluster")$($dry_run && echo " (dry run: nothing was built)")"
echo "images: install with: meshctl install --set hub=$hub --set tag=$tag"
