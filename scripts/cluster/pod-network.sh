# Pod addresses of the local control plane (sourced by up.sh, down.sh and apiserver.sh after lib.sh).
# See docs/adr/0007-local-control-plane.md, "Pod addresses".
#
# Every plane on a machine gets a slot of its own: a /22 of 198.19.192.0/18 for its pods
# (slot s: 198.19.(192+4s).0/22) and the prefix of the network namespaces its tests make
# (mesh-pod<s>-). Slots are claimed in a machine-wide directory, so two planes running at once
# never hand out the same pod address nor name a namespace alike:
#
#   $MESH_POD_SLOTS_DIR (default /run/mesh-cluster/pod-slots as root, else
#   ${XDG_RUNTIME_DIR:-/tmp}/mesh-cluster-<uid>/pod-slots)/<slot>  holds the owning state dir.
#
# A claim is live while that state dir exists and (once written) its cluster.env names the slot.
#
# The node simulator takes its addresses from one /24 of the plane's /22 per process: a new
# simulator process (after `apiserver.sh --restart-controllers` or a crash) does not know which
# addresses its predecessor gave to pods still running, and would hand them out again. Each start
# therefore takes the next /24 that no live pod uses (run/kwok-cidr).
#
# Test network namespaces are named <prefix><owner pid>-<anything>: the owner is the process that
# made it (a test process). One whose owner is gone is a crashed run's leftover: `up` removes those,
# `down` removes all of the plane's.
# shellcheck shell=bash disable=SC2154  # cluster_dir, POD_CIDR, api_curl: from lib.sh and cluster.env

pod_slot_count=16

pod_slots_dir() {
  if [[ -n "${MESH_POD_SLOTS_DIR:-}" ]]; then
    printf '%s\n' "$MESH_POD_SLOTS_DIR"
  elif [[ "$(id -u)" == 0 ]]; then
    printf '%s\n' /run/mesh-cluster/pod-slots
  else
    printf '%s\n' "${XDG_RUNTIME_DIR:-/tmp}/mesh-cluster-$(id -u)/pod-slots"
  fi
}

# pod_cidr_of SLOT: the plane's pod range.
pod_cidr_of() { printf '198.19.%d.0/22\n' $((192 + 4 * $1)); }

# netns_prefix_of SLOT: the prefix of the plane's test network namespaces.
netns_prefix_of() { printf 'mesh-pod%d-\n' "$1"; }

# slot_live SLOT OWNER_DIR: true when OWNER_DIR is a plane's state dir that holds SLOT.
slot_live() {
  local slot="$1" owner="$2"
  [[ -n "$owner" && -f "$owner/.mesh-cluster" ]] || return 1
  [[ -f "$owner/cluster.env" ]] || return 0 # being set up: cluster.env is written last
  grep -qx "POD_SLOT=$slot" "$owner/cluster.env"
}

# claim_pod_slot [SLOT]: claims SLOT for $cluster_dir (or the first free slot without one) and
# prints it. Fails when SLOT is held by another live plane or no slot is free. Taking over a
# stale claim removes the network namespaces its plane left behind.
claim_pod_slot() {
  local want="${1:-}" dir s owner got=""
  dir="$(pod_slots_dir)"
  mkdir -p "$dir" || cluster_die "cannot create $dir (MESH_POD_SLOTS_DIR)"
  (
    flock -w 60 7 || cluster_die "another plane holds $dir/.lock for more than a minute"
    for s in $(if [[ -n "$want" ]]; then echo "$want"; else seq 0 $((pod_slot_count - 1)); fi); do
      owner="$(cat "$dir/$s" 2>/dev/null || true)"
      if [[ -n "$owner" && "$owner" != "$cluster_dir" ]] && slot_live "$s" "$owner"; then
        [[ -n "$want" ]] && cluster_die "pod slot $s ($(pod_cidr_of "$s")) is held by the plane in $owner as well; run npm run cluster:down in one of them"
        continue
      fi
      if [[ -n "$owner" && "$owner" != "$cluster_dir" ]]; then
        cluster_log "pod slot $s: taking over the stale claim of $owner"
        pod_netns_cleanup "$(netns_prefix_of "$s")" all
      fi
      printf '%s\n' "$cluster_dir" >"$dir/$s.tmp" && mv -f "$dir/$s.tmp" "$dir/$s"
      got="$s"
      break
    done
    [[ -n "$got" ]] || cluster_die "all $pod_slot_count pod slots in $dir are held by running planes; stop one (npm run cluster:down)"
    printf '%s\n' "$got"
  ) 7>"$dir/.lock"
}

# release_pod_slot SLOT: drops the claim if it is this plane's.
release_pod_slot() {
  local dir
  dir="$(pod_slots_dir)"
  [[ -f "$dir/$1" && "$(cat "$dir/$1" 2>/dev/null)" == "$cluster_dir" ]] && rm -f "$dir/$1"
  return 0
}

# pod_net_capable: true when this process may make network namespaces, links and routes.
pod_net_capable() {
  [[ "$(id -u)" == 0 ]] && command -v ip >/dev/null 2>&1
}

# pod_netns_cleanup PREFIX all|dead: removes the network namespaces named PREFIX<pid>-…, all of
# them or only those whose owner process is gone, with the processes still inside them. Deleting
# the namespace's end of its link removes the host's end and the host's route to it as well.
pod_netns_cleanup() {
  local prefix="$1" mode="$2" name rest pid
  pod_net_capable || return 0
  while read -r name _; do
    [[ "$name" == "$prefix"* ]] || continue
    rest="${name#"$prefix"}"
    pid="${rest%%-*}"
    if [[ "$mode" == dead && "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
      continue
    fi
    ip netns pids "$name" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip -n "$name" link del eth0 2>/dev/null || true
    ip netns del "$name" 2>/dev/null || true
    cluster_log "removed network namespace $name"
  done < <(ip netns list 2>/dev/null)
}

# pod_net_up: the plane's guard route. Pod addresses that no test plays are unreachable at once
# (instead of leaving through the default route); played pods get a more specific route to their
# namespace. Recorded in pod-net for down.sh.
pod_net_up() {
  pod_net_capable || return 0
  if ip route replace unreachable "$POD_CIDR" 2>/dev/null; then
    printf '%s\n' "$POD_CIDR" >"$cluster_dir/pod-net"
  else
    cluster_log "could not add the route 'unreachable $POD_CIDR': pod addresses of this plane may leave through the default route"
  fi
}

pod_net_down() {
  [[ -f "$cluster_dir/pod-net" ]] || return 0
  ip route del unreachable "$(cat "$cluster_dir/pod-net")" 2>/dev/null || true
  rm -f "$cluster_dir/pod-net"
}

# choose_kwok_cidr: the /24 of POD_CIDR the next simulator process hands out (see above), from the
# pods the API server lists now; writes it to run/kwok-cidr and prints it.
choose_kwok_cidr() {
  local last cidr pods
  last="$(cat "$cluster_dir/run/kwok-cidr" 2>/dev/null || true)"
  pods="$(api_curl /api/v1/pods 2>/dev/null || true)"
  cidr="$(printf '%s' "$pods" | node "$(dirname "${BASH_SOURCE[0]}")/kwok-cidr.mjs" "$POD_CIDR" "$last")" ||
    cluster_die "cannot choose the simulator's pod addresses"
  printf '%s\n' "$cidr" >"$cluster_dir/run/kwok-cidr"
  printf '%s\n' "$cidr"
}
