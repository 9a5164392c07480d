#!/usr/bin/env bash
# Stops the local control plane (npm run cluster:down) and removes its state dir: certificates,
# etcd data, logs. Idempotent: with nothing running and no state it says so and succeeds.
#
# Usage: scripts/cluster/down.sh [--keep-state]   (--keep-state: stop the servers, keep the state,
#                                                  so the next cluster:up resumes with the same data)
set -euo pipefail
# shellcheck source=scripts/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

keep=false
case "${1:-}" in
  "") ;;
  --keep-state) keep=true ;;
  *) cluster_die "usage: scripts/cluster/down.sh [--keep-state]" ;;
esac

if [[ ! -e "$cluster_dir" ]]; then
  cluster_log "nothing to stop: no state dir $cluster_dir"
  exit 0
fi
if [[ ! -f "$cluster_dir/.mesh-cluster" ]]; then
  cluster_die "$cluster_dir is not a local control plane's state dir (no .mesh-cluster marker); not touching it"
fi

with_lock
# The clients and the API server together (nothing is kept, so no order is needed among them),
# etcd last so that the API server's last writes still land.
stop_pid kwok kube-scheduler kube-controller-manager kube-apiserver
stop_pid etcd

# The plane's pod networking: the test network namespaces left (a test process still using them
# loses its pods), the guard route, and, unless the state is kept, the claim on its pod slot.
if [[ -f "$cluster_dir/cluster.env" ]]; then
  # shellcheck disable=SC1091
  source "$cluster_dir/cluster.env"
  if [[ -n "${NETNS_PREFIX:-}" ]]; then pod_netns_cleanup "$NETNS_PREFIX" all; fi
  pod_net_down
  if [[ -n "${POD_SLOT:-}" ]] && ! $keep; then release_pod_slot "$POD_SLOT"; fi
fi
# State of the first format: a local route for the whole pod range.
if [[ -f "$cluster_dir/pod-route" ]]; then
  ip route del local "$(cat "$cluster_dir/pod-route")" dev lo 2>/dev/null || true
  rm -f "$cluster_dir/pod-route"
fi

if $keep; then
  cluster_log "stopped; state kept in $cluster_dir"
else
  rm -rf "$cluster_dir"
  rm -f "$cluster_dir.lock"
  cluster_log "stopped and removed $cluster_dir"
fi
