#!/usr/bin/env bash
# Restarts the node simulator (kwok) alone, e.g. for a test of what a new simulator process does
# with the pods its predecessor made. Nodes, pods and their addresses stay; the new process hands
# out addresses from a block no running pod uses (pod-network.sh).
#
# Usage: scripts/cluster/simulator.sh restart
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/cluster/lib.sh
source "$here/lib.sh"

[[ "${1:-}" == restart && $# -eq 1 ]] || cluster_die "usage: scripts/cluster/simulator.sh restart"
load_state
with_lock
path="$(bash "$here/build.sh" kwok)"
stop_pid kwok
start_component kwok "${path#kwok=}" 90
