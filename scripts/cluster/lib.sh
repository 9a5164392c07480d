# Shared settings and helpers of the local control plane scripts (sourced, not run).
#
# Environment:
#   MESH_TOOLS_CACHE   binary cache              (default ~/.cache/mesh/tools)
#   MESH_CLUSTER_DIR   state of the running plane (default ~/.cache/mesh/cluster)
#   MESH_CLUSTER_NODES number of simulated nodes   (default 2)
# shellcheck shell=bash

cluster_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC2034  # cluster_tools and cluster_cache are used by build.sh
cluster_tools="$cluster_root/tools/cluster"
: "${HOME:=}"
# shellcheck disable=SC2034
cluster_cache="${MESH_TOOLS_CACHE:-${HOME:?HOME is not set; set MESH_TOOLS_CACHE}/.cache/mesh/tools}"
cluster_dir="${MESH_CLUSTER_DIR:-${HOME:?HOME is not set; set MESH_CLUSTER_DIR}/.cache/mesh/cluster}"

# The Go toolchain lives here on the project's machines; a go already on PATH wins.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi

cluster_log() { printf 'cluster: %s\n' "$*" >&2; }
cluster_die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

# module_version MODULE_DIR MODULE_PATH: the version that MODULE_DIR/go.mod requires.
module_version() {
  local v
  v="$(awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) { for (i = 1; i <= NF; i++) if ($i ~ /^v[0-9]/) { print $i; exit } }' "$1/go.mod")"
  [[ -n "$v" ]] || cluster_die "tools/cluster: $1/go.mod does not require $2"
  printf '%s\n' "$v"
}

# pid_alive PIDFILE BINARY: true when PIDFILE names a live process running BINARY.
pid_alive() {
  local pidfile="$1" bin="$2" pid exe
  [[ -f "$pidfile" ]] || return 1
  pid="$(cat "$pidfile" 2>/dev/null)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  # A pid can be reused after a crash: only trust it while it still runs our binary.
  [[ -z "$bin" || "$exe" == "$bin" || "$exe" == "$bin (deleted)" ]]
}

# stop_pid NAME...: SIGTERM the components at once, SIGKILL what still runs after 15 s, remove
# their pid files.
stop_pid() {
  local name pidfile bin pid i
  local -a names=() pids=()
  for name in "$@"; do
    pidfile="$cluster_dir/run/$name.pid"
    [[ -f "$pidfile" ]] || continue
    bin="$(cat "$cluster_dir/run/$name.bin" 2>/dev/null || true)"
    if pid_alive "$pidfile" "$bin"; then
      pid="$(cat "$pidfile")"
      kill -TERM "$pid" 2>/dev/null || true
      names+=("$name")
      pids+=("$pid")
    else
      rm -f "$pidfile"
    fi
  done
  for ((i = 0; i < ${#pids[@]}; i++)); do
    local waited=0
    while kill -0 "${pids[i]}" 2>/dev/null && ((waited < 150)); do
      sleep 0.1
      waited=$((waited + 1))
    done
    if kill -0 "${pids[i]}" 2>/dev/null; then
      cluster_log "${names[i]} (pid ${pids[i]}) did not stop in 15s; killing it"
      kill -KILL "${pids[i]}" 2>/dev/null || true
      sleep 0.2
    fi
    rm -f "$cluster_dir/run/${names[i]}.pid"
    cluster_log "stopped ${names[i]} (pid ${pids[i]})"
  done
}

# load_state: reads the ports and paths that `up` chose (fails when the plane was never set up).
load_state() {
  [[ -f "$cluster_dir/cluster.env" ]] || cluster_die "no local control plane in $cluster_dir (run: npm run cluster:up)"
  # shellcheck disable=SC1091
  source "$cluster_dir/cluster.env"
}

# api_curl PATH [curl args...]: a request to the API server as the admin user.
api_curl() {
  local path="$1"
  shift
  curl -sS --max-time 10 --cacert "$cluster_dir/pki/ca.crt" \
    --cert "$cluster_dir/pki/admin.crt" --key "$cluster_dir/pki/admin.key" \
    "https://127.0.0.1:${APISERVER_PORT}${path}" "$@"
}

# component_cmd NAME BIN: sets the array `cmd` to the command line that starts component NAME.
# Every listener is on 127.0.0.1; the addresses given to pods, nodes and services are fictitious
# (benchmarking range 198.18.0.0/15). Only pods a test plays get a network namespace that answers
# on their address (pod-network.sh).
component_cmd() {
  local name="$1" bin="$2" d="$cluster_dir"
  case "$name" in
    etcd)
      cmd=("$bin" --name=mesh-local --data-dir="$d/data/etcd"
        --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT"
        --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT"
        --initial-cluster="mesh-local=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new
        # A throwaway store for tests: no fsync, frequent compaction.
        --unsafe-no-fsync --auto-compaction-mode=periodic --auto-compaction-retention=5m
        --quota-backend-bytes=2147483648 --log-level=warn)
      ;;
    kube-apiserver)
      # shellcheck disable=SC2054  # the commas belong to flag values
      cmd=("$bin" --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" --advertise-address=127.0.0.1
        --etcd-servers="http://127.0.0.1:$ETCD_PORT"
        --tls-cert-file="$d/pki/apiserver.crt" --tls-private-key-file="$d/pki/apiserver.key"
        --client-ca-file="$d/pki/ca.crt" --authorization-mode=Node,RBAC
        --requestheader-client-ca-file="$d/pki/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client
        --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group
        --requestheader-extra-headers-prefix=X-Remote-Extra-
        --proxy-client-cert-file="$d/pki/front-proxy-client.crt" --proxy-client-key-file="$d/pki/front-proxy-client.key"
        --service-account-issuer="$SERVICE_ACCOUNT_ISSUER"
        --service-account-key-file="$d/pki/sa.pub" --service-account-signing-key-file="$d/pki/sa.key"
        --service-cluster-ip-range="$SERVICE_CIDR" --allow-privileged=true
        # The "kubernetes" Service would get 127.0.0.1 as its endpoint, which Endpoints reject.
        --endpoint-reconciler-type=none
        # On SIGTERM, end open watches within 2 s; without it the HTTP server waits for them
        # until the request timeout (60 s) and a stop takes that long.
        --shutdown-watch-termination-grace-period=2s
        --profiling=false --v=1)
      ;;
    kube-controller-manager)
      cmd=("$bin" --bind-address=127.0.0.1 --secure-port="$CONTROLLER_MANAGER_PORT" --cert-dir="$d/run/certs-kube-controller-manager"
        --kubeconfig="$d/kube-controller-manager.kubeconfig"
        --authentication-kubeconfig="$d/kube-controller-manager.kubeconfig" --authorization-kubeconfig="$d/kube-controller-manager.kubeconfig"
        --leader-elect=false --use-service-account-credentials=true
        --service-account-private-key-file="$d/pki/sa.key" --root-ca-file="$d/pki/ca.crt"
        --cluster-signing-cert-file="$d/pki/ca.crt" --cluster-signing-key-file="$d/pki/ca.key"
        --cluster-name=mesh-local --allocate-node-cidrs=false --service-cluster-ip-range="$SERVICE_CIDR"
        --controllers="$CONTROLLERS" --profiling=false --v=1)
      ;;
    kube-scheduler)
      cmd=("$bin" --config="$d/kube-scheduler.yaml" --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT"
        --cert-dir="$d/run/certs-kube-scheduler"
        --authentication-kubeconfig="$d/kube-scheduler.kubeconfig" --authorization-kubeconfig="$d/kube-scheduler.kubeconfig"
        --profiling=false --v=1)
      ;;
    kwok)
      cmd=("$bin" --kubeconfig="$d/kwok.kubeconfig" --config="$d/kwok-stages.yaml" --manage-all-nodes=true
        --cidr="${KWOK_CIDR:?choose_kwok_cidr first}" --node-ip="$NODE_IP" --node-lease-duration-seconds=40
        --server-address="127.0.0.1:$KWOK_PORT")
      ;;
    *) cluster_die "unknown component '$name'" ;;
  esac
}

# health_ok NAME: true when the component answers its health check.
health_ok() {
  local out=""
  case "$1" in
    etcd) out="$(curl -sS --max-time 5 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null || true)"; [[ "$out" == *'"health":"true"'* ]] ;;
    kube-apiserver) out="$(api_curl /readyz 2>/dev/null || true)"; [[ "$out" == ok ]] ;;
    kube-controller-manager) out="$(curl -sSk --max-time 5 "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz" 2>/dev/null || true)"; [[ "$out" == ok ]] ;;
    kube-scheduler) out="$(curl -sSk --max-time 5 "https://127.0.0.1:$SCHEDULER_PORT/healthz" 2>/dev/null || true)"; [[ "$out" == ok ]] ;;
    kwok) out="$(curl -sS --max-time 5 "http://127.0.0.1:$KWOK_PORT/healthz" 2>/dev/null || true)"; [[ "$out" == ok* ]] ;;
  esac
}

# start_component NAME BIN TIMEOUT_S: starts NAME unless it runs, then waits for its health check.
start_component() {
  local name="$1" bin="$2" timeout="$3" pidfile="$cluster_dir/run/$1.pid" pid deadline started=$SECONDS
  if pid_alive "$pidfile" "$(cat "$cluster_dir/run/$name.bin" 2>/dev/null)"; then
    cluster_log "$name already running (pid $(cat "$pidfile"))"
  else
    mkdir -p "$cluster_dir/run" "$cluster_dir/logs"
    # A new simulator process hands out pod addresses from a block no running pod uses.
    if [[ "$name" == kwok ]]; then KWOK_CIDR="$(choose_kwok_cidr)"; fi
    component_cmd "$name" "$bin"
    if [[ "$name" == kwok ]]; then
      # The node leases still name the previous simulator process, and a new one (a new random
      # identity) would wait for them to expire (40 s) before it takes the nodes over.
      api_curl /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases -X DELETE -o /dev/null 2>/dev/null || true
    fi
    printf '\n==== %s starting %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${cmd[*]}" >>"$cluster_dir/logs/$name.log"
    # setsid: a new session, so a Ctrl-C in the shell that ran `up` does not reach the servers.
    # HOME points into the state dir so no per-user config of a component is read.
    # 8>&- 9>&-: the servers must not inherit (and so hold) the scripts' lock files.
    HOME="$cluster_dir/run/home" setsid "${cmd[@]}" </dev/null >>"$cluster_dir/logs/$name.log" 2>&1 8>&- 9>&- &
    pid=$!
    printf '%s\n' "$pid" >"$pidfile"
    printf '%s\n' "$bin" >"$cluster_dir/run/$name.bin"
    cluster_log "started $name (pid $pid, log $cluster_dir/logs/$name.log)"
  fi
  deadline=$((SECONDS + timeout))
  until health_ok "$name"; do
    if ! pid_alive "$pidfile" "$(cat "$cluster_dir/run/$name.bin")"; then
      cluster_log "$name exited; last lines of $cluster_dir/logs/$name.log:"
      tail -n 40 "$cluster_dir/logs/$name.log" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      cluster_log "$name not healthy after ${timeout}s; last lines of $cluster_dir/logs/$name.log:"
      tail -n 40 "$cluster_dir/logs/$name.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
  cluster_log "$name healthy ($((SECONDS - started))s)"
}

# with_lock: serialises up, down and apiserver.sh on one state dir (the lock file sits beside it).
with_lock() {
  mkdir -p "$(dirname "$cluster_dir")"
  exec 8>"$cluster_dir.lock"
  if ! flock -w 600 8; then
    cluster_die "another cluster command holds $cluster_dir.lock for more than 10 minutes"
  fi
}

# shellcheck source=scripts/cluster/pod-network.sh
source "$(dirname "${BASH_SOURCE[0]}")/pod-network.sh"
