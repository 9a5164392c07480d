/**
 * The proxy side's fixed names (docs/spec/CONVENTIONS.md, docs/adr/0071): ports, the proxy's user,
 * the paths inside the proxy container that the injector mounts and the agent reads or writes, and
 * the SDS secret names Envoy asks the agent for. The injector (src/inject/) and the agent
 * (src/agent/) both take them from here, so a pod the injector renders is a pod the agent can run.
 */

/** uid and gid the proxy and the agent run as; the capture rules let its traffic through. */
export const PROXY_UID = 1337;
export const PROXY_GID = 1337;

export const PROXY_PORTS = Object.freeze({
  /** Envoy's admin interface (loopback only). */
  admin: 15000,
  /** Outbound capture: redirected outbound TCP lands here. */
  outbound: 15001,
  /** Inbound capture: redirected inbound TCP lands here. */
  inbound: 15006,
  /** The agent: merged Prometheus metrics (`/stats/prometheus`) and rewritten application probes (`/app-health/...`). */
  status: 15020,
  /** The agent: readiness of the proxy (`/healthz/ready`). */
  health: 15021,
  /** Envoy's own Prometheus listener (`/stats/prometheus`). */
  envoyPrometheus: 15090,
  /** The agent's DNS proxy (loopback, UDP and TCP), where captured port-53 traffic goes (docs/adr/0187). */
  dns: 15053,
});

/** Inbound ports never captured: the proxy's own listeners. */
export const PROXY_INBOUND_EXCLUDED_PORTS: ReadonlyArray<number> = Object.freeze([PROXY_PORTS.envoyPrometheus, PROXY_PORTS.health, PROXY_PORTS.status]);

/** The agent's SDS socket, relative to the proxy container's working directory (`/`). */
export const SDS_SOCKET_PATH = './var/run/secrets/workload-spiffe-uds/socket';
/** The directory the SDS socket lives in (an emptyDir the injector mounts). */
export const SDS_SOCKET_DIR = '/var/run/secrets/workload-spiffe-uds';

/** SDS name of the workload's own certificate chain and key. */
export const SDS_WORKLOAD_SECRET = 'default';
/** SDS name of the mesh's trust bundle (a validation context). */
export const SDS_ROOT_SECRET = 'ROOTCA';

/** Projected service-account token for audience `mesh-ca`. */
export const TOKEN_DIR = '/var/run/secrets/tokens';
export const TOKEN_PATH = `${TOKEN_DIR}/mesh-token`;
export const TOKEN_AUDIENCE = 'mesh-ca';
/** The mesh's root certificate (ConfigMap `mesh-ca-root-cert`, key `root-cert.pem`). */
export const ROOT_CERT_DIR = '/var/run/secrets/mesh';
export const ROOT_CERT_PATH = `${ROOT_CERT_DIR}/root-cert.pem`;
export const ROOT_CERT_CONFIGMAP = 'mesh-ca-root-cert';
/** Where the agent writes the Envoy bootstrap (and, for proxyless gRPC, the gRPC bootstrap). */
export const PROXY_CONFIG_DIR = '/etc/mesh/proxy';
export const ENVOY_BOOTSTRAP_PATH = `${PROXY_CONFIG_DIR}/envoy-rev.json`;
export const GRPC_BOOTSTRAP_PATH = `${PROXY_CONFIG_DIR}/grpc-bootstrap.json`;
/** Where the agent writes certificate files for proxyless gRPC. */
export const CERT_OUTPUT_DIR = '/var/lib/mesh/data';
/** Downward-API files of the pod's labels and annotations. */
export const POD_INFO_DIR = '/etc/mesh/pod';

/** Prefix of the proxy container's variables that become node metadata (`MESH_META_CLUSTER_ID` → `CLUSTER_ID`). */
export const META_ENV_PREFIX = 'MESH_META_';
/** JSON of the application's original HTTP probes, keyed by the agent path that replaces them. */
export const APP_PROBERS_ENV = 'MESH_KUBE_APP_PROBERS';
/** JSON of the application's original Prometheus scrape annotations (merged metrics). */
export const PROMETHEUS_ANNOTATIONS_ENV = 'MESH_PROMETHEUS_ANNOTATIONS';
/** Agent path of a rewritten probe: `/app-health/<container>/<readyz|livez|startupz>`. */
export const APP_HEALTH_PREFIX = '/app-health/';

/** The gRPC xDS bootstrap variable of proxyless gRPC applications. */
export const GRPC_XDS_BOOTSTRAP_ENV = 'GRPC_XDS_BOOTSTRAP';
