#!/usr/bin/env bash
# Starts the local control plane (npm run cluster:up): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and a node simulator, all on 127.0.0.1, in the background. Builds the programs
# first if the cache lacks them (minutes, once). Waits until /readyz is ok, the simulated nodes
# are Ready and the default service account exists, then prints the admin kubeconfig's path
# (the only line on stdout; progress goes to stderr).
#
# Idempotent: components that already run are kept; stopped ones are started again with the same
# state (ports, certificates, etcd data). `npm run cluster:down` stops everything and removes it.
#
# Environment: MESH_CLUSTER_DIR (state, default ~/.cache/mesh/cluster), MESH_TOOLS_CACHE (binaries),
# MESH_CLUSTER_NODES (simulated nodes, default 2), MESH_CLUSTER_APISERVER_PORT (default: a free
# port chosen once). See docs/adr/0007-local-control-plane.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/cluster/lib.sh
source "$here/lib.sh"

t0=$SECONDS
for tool in curl openssl flock setsid base64; do
  command -v "$tool" >/dev/null 2>&1 || cluster_die "$tool is required (Debian: apt-get install curl openssl util-linux coreutils)"
done
node_count="${MESH_CLUSTER_NODES:-2}"
[[ "$node_count" =~ ^[0-9]+$ ]] || cluster_die "MESH_CLUSTER_NODES must be a number, not '$node_count'"

# 1. Programs (built once per version into the cache; later runs only look them up).
declare -A bin
while IFS='=' read -r name path; do
  bin[$name]="$path"
done < <(bash "$here/build.sh" etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
t_built=$SECONDS

with_lock

# free_port: a TCP port on 127.0.0.1 that nobody listens on right now.
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close();});'
}

# issue NAME SUBJECT EXT [CA]: a key and a certificate signed by CA (default: the plane's CA).
issue() {
  local name="$1" subject="$2" ext="$3" ca="${4:-ca}" pki="$cluster_dir/pki"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$pki/$name.key" \
    -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/$ca.crt" -CAkey "$pki/$ca.key" -days 825 \
    -set_serial "0x$(openssl rand -hex 16)" -extfile <(printf '%s\n' "$ext") -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr"
}

# kubeconfig FILE USER: a kubeconfig with the CA and USER's client certificate embedded.
kubeconfig() {
  local file="$1" user="$2" pki="$cluster_dir/pki"
  cat >"$file.tmp" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: mesh-local
  cluster:
    server: https://127.0.0.1:${APISERVER_PORT}
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$user.crt")
    client-key-data: $(base64 -w0 <"$pki/$user.key")
contexts:
- name: mesh-local
  context:
    cluster: mesh-local
    user: $user
    namespace: default
current-context: mesh-local
YAML
  chmod 600 "$file.tmp"
  mv -f "$file.tmp" "$file"
}

# Bump when the state dir's layout or contents change; an older state is refused.
state_format=2

# 2. State: ports, certificates, kubeconfigs and component configs, made once.
init_state() {
  if [[ -e "$cluster_dir" && ! -f "$cluster_dir/.mesh-cluster" ]] && [[ -n "$(ls -A "$cluster_dir" 2>/dev/null)" ]]; then
    cluster_die "$cluster_dir exists and is not a local control plane's state dir; set MESH_CLUSTER_DIR elsewhere or remove it"
  fi
  cluster_log "new state in $cluster_dir"
  rm -rf "$cluster_dir"
  mkdir -p "$cluster_dir"/{pki,data,logs,run/home}
  chmod 700 "$cluster_dir"
  touch "$cluster_dir/.mesh-cluster"
  local pki="$cluster_dir/pki" api_port="${MESH_CLUSTER_APISERVER_PORT:-$(free_port)}" slot
  # The plane's pod addresses and test namespace names, unique among the planes on this machine.
  slot="$(claim_pod_slot)" || exit 1
  pod_netns_cleanup "$(netns_prefix_of "$slot")" all
  cat >"$cluster_dir/cluster.env.tmp" <<ENV
# Written by scripts/cluster/up.sh; read by the other scripts and test/support/cluster.ts.
STATE_FORMAT=$state_format
APISERVER_PORT=$api_port
ETCD_PORT=$(free_port)
ETCD_PEER_PORT=$(free_port)
CONTROLLER_MANAGER_PORT=$(free_port)
SCHEDULER_PORT=$(free_port)
KWOK_PORT=$(free_port)
SERVICE_ACCOUNT_ISSUER=https://kubernetes.default.svc.cluster.local
SERVICE_CIDR=198.19.0.0/17
POD_SLOT=$slot
POD_CIDR=$(pod_cidr_of "$slot")
NETNS_PREFIX=$(netns_prefix_of "$slot")
NODE_IP=198.19.128.1
CONTROLLERS=*,-node-ipam-controller
KUBECONFIG_PATH=$cluster_dir/admin.kubeconfig
SERVER=https://127.0.0.1:$api_port
ENV
  # shellcheck disable=SC1091
  source "$cluster_dir/cluster.env.tmp"

  # CA (EC P-256) and the leaf certificates; RSA for the service-account token key (RS256).
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$pki/ca.key" \
    -subj "/CN=mesh-local-ca" -days 3650 -out "$pki/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  local client=$'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
  issue apiserver "/CN=kube-apiserver" $'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:198.19.0.1'
  issue admin "/O=system:masters/CN=mesh-admin" "$client"
  # The aggregation layer's own CA and the client certificate the API server proxies with.
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$pki/front-proxy-ca.key" \
    -subj "/CN=mesh-local-front-proxy-ca" -days 3650 -out "$pki/front-proxy-ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  issue front-proxy-client "/CN=front-proxy-client" "$client" front-proxy-ca
  issue kube-controller-manager "/CN=system:kube-controller-manager" "$client"
  issue kube-scheduler "/CN=system:kube-scheduler" "$client"
  issue kwok "/CN=mesh:node-simulator" "$client"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
  chmod 600 "$pki"/*.key

  kubeconfig "$cluster_dir/admin.kubeconfig" admin
  kubeconfig "$cluster_dir/kube-controller-manager.kubeconfig" kube-controller-manager
  kubeconfig "$cluster_dir/kube-scheduler.kubeconfig" kube-scheduler
  kubeconfig "$cluster_dir/kwok.kubeconfig" kwok
  cat >"$cluster_dir/kube-scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $cluster_dir/kube-scheduler.kubeconfig
leaderElection:
  leaderElect: false
YAML
  # Last: its presence marks a complete state.
  mv -f "$cluster_dir/cluster.env.tmp" "$cluster_dir/cluster.env"
}

if [[ ! -f "$cluster_dir/cluster.env" ]]; then
  init_state
fi
load_state
if [[ "${STATE_FORMAT:-}" != "$state_format" ]]; then
  # A state made by older scripts (a plane of an earlier checkout on this machine): stop what it
  # still runs, drop it and the machine-wide local route its format used, and start afresh.
  cluster_log "$cluster_dir was made by an older version of these scripts (format ${STATE_FORMAT:-none}); replacing it"
  stop_pid kwok kube-scheduler kube-controller-manager kube-apiserver
  stop_pid etcd
  if [[ $EUID -eq 0 ]] && command -v ip >/dev/null 2>&1; then
    ip route del local 198.18.0.0/16 dev lo table local 2>/dev/null || true
  fi
  rm -rf "${cluster_dir:?}"/*
  unset STATE_FORMAT
  init_state
  load_state
fi
# Claimed again on every start: after a reboot the machine-wide claims are gone, the state is not.
claim_pod_slot "$POD_SLOT" >/dev/null || exit 1
# Network namespaces of test processes that ended without removing them (a crashed run).
pod_netns_cleanup "$NETNS_PREFIX" dead
cp -f "$here/kwok-stages.yaml" "$cluster_dir/kwok-stages.yaml"

# api_apply PATH JSON: creates an object; "already exists" is fine.
api_apply() {
  local code
  code="$(api_curl "$1" -o "$cluster_dir/run/last-response.json" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' --data-binary "$2")"
  case "$code" in
    200 | 201 | 409) ;;
    *) cluster_die "POST $1 answered $code: $(cat "$cluster_dir/run/last-response.json")" ;;
  esac
}

fail_start() {
  cluster_die "$1 did not start (log: $cluster_dir/logs/$1.log); what runs stays up, npm run cluster:down stops it and removes the state"
}

# 3. Servers, in order; each waits for the previous one's health.
start_component etcd "${bin[etcd]}" 60 || fail_start etcd
start_component kube-apiserver "${bin[kube-apiserver]}" 120 || fail_start kube-apiserver

# The node simulator's identity may manage nodes, leases and pods: give it cluster-admin.
api_apply /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"mesh:node-simulator"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"mesh:node-simulator"}]}'
for ((i = 0; i < node_count; i++)); do
  n="mesh-node-$i"
  api_apply /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$n\",\"labels\":{\"kubernetes.io/hostname\":\"$n\",\"kubernetes.io/os\":\"linux\",\"kubernetes.io/arch\":\"amd64\",\"topology.kubernetes.io/zone\":\"zone-$((i % 2))\",\"mesh.local/simulated\":\"true\"},\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\",\"kwok.x-k8s.io/node\":\"fake\"}},\"spec\":{}}"
done

start_component kube-controller-manager "${bin[kube-controller-manager]}" 90 || fail_start kube-controller-manager
start_component kube-scheduler "${bin[kube-scheduler]}" 90 || fail_start kube-scheduler
start_component kwok "${bin[kwok]}" 60 || fail_start kwok

# 4. What a test needs before it creates pods: Ready nodes without the not-ready taint, and the
#    default service account (made by the controller manager; pods are refused without it).
deadline=$((SECONDS + 120))
until api_curl /api/v1/namespaces/default/serviceaccounts/default -o /dev/null -f 2>/dev/null; do
  ((SECONDS < deadline)) || cluster_die "no default service account after 120s; see $cluster_dir/logs/kube-controller-manager.log"
  sleep 0.3
done
until [[ "$(api_curl /api/v1/nodes 2>/dev/null | node -e '
  let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => {
    try {
      const items = JSON.parse(s).items;
      const ready = items.filter((n) => (n.status.conditions || []).some((c) => c.type === "Ready" && c.status === "True")
        && !(n.spec.taints || []).some((t) => t.key.startsWith("node.kubernetes.io/")));
      console.log(ready.length >= Number(process.argv[1]) ? "ready" : "waiting");
    } catch { console.log("waiting"); }
  });' "$node_count")" == ready ]]; do
  ((SECONDS < deadline)) || cluster_die "simulated nodes not Ready after 120s; see $cluster_dir/logs/kwok.log"
  sleep 0.3
done

# 5. Pod addresses: the tests give each pod they play a network namespace of its own with the pod's
# address (test/support/netns.ts, e2e/support/pod-player.ts); the rest of the plane's range is
# unreachable from this host. Needs root (CAP_NET_ADMIN); without it, tests that need pod addresses
# say so and skip.
pod_net_up

cluster_log "ready in $((SECONDS - t0))s ($((SECONDS - t_built))s after the build check): $SERVER"
cluster_log "try: KUBECONFIG=$KUBECONFIG_PATH kubectl get nodes   (kubectl: scripts/cluster/build.sh kubectl)"
printf '%s\n' "$KUBECONFIG_PATH"
