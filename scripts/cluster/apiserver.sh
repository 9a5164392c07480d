#!/usr/bin/env bash
# Stops or starts kube-apiserver alone, leaving etcd, the controllers and the node simulator
# running, e.g. for a test of how a client rides out an API server restart.
#
# Usage: scripts/cluster/apiserver.sh stop|start|restart|status [--restart-controllers]
#   start waits until /readyz is ok again (same port, certificates and etcd data as before).
#
# The other components ride out the outage on their own, but their watches come back only after
# client-go's retry backoff (which grows to 30 s plus jitter while the server is away): after an
# outage of a few seconds, a new Deployment may get its pods up to a minute later. With
# --restart-controllers, start and restart also restart kube-controller-manager, kube-scheduler
# and the node simulator once the API server is ready, so the cluster reacts at once again.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/cluster/lib.sh
source "$here/lib.sh"

usage="usage: scripts/cluster/apiserver.sh stop|start|restart|status [--restart-controllers]"
restart_controllers=false
case "${2:-}" in
  "") ;;
  --restart-controllers) restart_controllers=true ;;
  *) cluster_die "$usage" ;;
esac

case "${1:-}" in
  stop | start | restart | status) ;;
  *) cluster_die "$usage" ;;
esac

load_state
start() {
  local name path
  path="$(bash "$here/build.sh" kube-apiserver)"
  start_component kube-apiserver "${path#kube-apiserver=}" 120
  if $restart_controllers; then
    for name in kube-controller-manager kube-scheduler kwok; do
      path="$(bash "$here/build.sh" "$name")"
      path="${path#"$name="}"
      stop_pid "$name"
      start_component "$name" "$path" 90
    done
  fi
}
case "${1:-}" in
  stop) with_lock; stop_pid kube-apiserver ;;
  start) with_lock; start ;;
  restart) with_lock; stop_pid kube-apiserver; start ;;
  status)
    if pid_alive "$cluster_dir/run/kube-apiserver.pid" "$(cat "$cluster_dir/run/kube-apiserver.bin" 2>/dev/null)"; then
      echo "running (pid $(cat "$cluster_dir/run/kube-apiserver.pid")); /readyz: $(api_curl /readyz 2>&1 || true)"
    else
      echo "stopped"
      exit 3
    fi
    ;;
  *) cluster_die "$usage" ;;
esac
