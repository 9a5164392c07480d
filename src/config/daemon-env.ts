/**
 * The daemon's environment variables (spec "Environment variables"): the table below is the
 * single source of their names, types, defaults and descriptions. `parseDaemonEnv` reads them
 * once, with zod, into a frozen, typed `DaemonEnv` whose keys are the variable names:
 * durations in milliseconds, booleans as booleans, and strings without a default as
 * `undefined` when unset.
 *
 * An empty value counts as unset for B, D, I and F variables (manifests often carry `value: ""`);
 * for strings an empty value is a value (VALIDATION_WEBHOOK_CONFIG_NAME gives it a meaning),
 * except for variables with a fixed set of allowed values.
 */
import { z } from 'zod';
import { ConfigError } from '../util/config-error.js';
import { parseDuration } from '../util/duration.js';
import { checkRange, parseBool, parseDecimal, parseInteger } from '../util/parse.js';

export { ConfigError } from '../util/config-error.js';

/** Type legend of the spec: S string, B boolean, D duration, I integer, F floating point. */
export type EnvType = 'S' | 'B' | 'D' | 'I' | 'F';

export interface EnvVarSpec {
  readonly name: string;
  readonly type: EnvType;
  /** The default as the spec writes it (`100ms`, `true`, `2048`); `null` where the spec says none. */
  readonly default: string | null;
  readonly description: string;
  /** Inclusive bounds for I and F variables. */
  readonly min?: number;
  readonly max?: number;
  /** The only values an S variable may take. */
  readonly allowed?: readonly string[];
}

/** Every variable of the spec's table, in its order. */
export const DAEMON_ENV_VARS = [
  { name: 'AUDIENCE', type: 'S', default: null, description: 'Audience expected in tokens.' },
  { name: 'CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR', type: 'B', default: 'true', description: 'Adds a random backoff, shorter than the root-cert check interval, before the root cert rotator starts.' },
  { name: 'CA_SELF_SIGNED_CA_CERT_TTL', type: 'D', default: '87600h0m0s', description: 'Lifetime of the self-signed CA root certificate.' },
  { name: 'CA_SELF_SIGNED_CA_RSA_KEY_SIZE', type: 'I', default: '2048', description: 'RSA key size for self-signed CA certificates.' },
  { name: 'CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL', type: 'D', default: '1h0m0s', description: 'How often the self-signed CA checks root cert expiry and rotates it. Zero or negative disables checking and rotation. Suggested to be above 10 minutes.' },
  { name: 'CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE', type: 'I', default: '20', min: 0, max: 100, description: 'Grace period percentile for the self-signed root cert.' },
  { name: 'CLUSTER_ID', type: 'S', default: 'Cluster', description: 'Cluster and registry this instance belongs to.' },
  { name: 'DEFAULT_WORKLOAD_CERT_TTL', type: 'D', default: '24h0m0s', description: 'Lifetime of issued workload certificates when the CSR carries a non-positive TTL.' },
  { name: 'ENABLE_CA_SERVER', type: 'B', default: 'true', description: 'When false, no CA server is created.' },
  { name: 'ENABLE_DEBUG_ON_HTTP', type: 'B', default: 'true', description: 'When false, the debug interface is not served over plain HTTP (recommended for production).' },
  { name: 'ENABLE_LEGACY_FSGROUP_INJECTION', type: 'B', default: 'true', description: 'Sets the pod fsGroup to 1337 on injection. Required for orchestrator versions 1.18 and older, unless JWT_POLICY is `first-party-jwt`.' },
  { name: 'ENABLE_MCS_AUTOEXPORT', type: 'B', default: 'false', description: 'Auto-creates a multi-cluster ServiceExport for every service. Services declared cluster-local in the mesh config are excluded.' },
  { name: 'ENABLE_MCS_HOST', type: 'B', default: 'false', description: 'Adds the alias `<svc>.<namespace>.svc.clusterset.local` for each service. Clients need DNS interception or an MCS controller to resolve it.' },
  { name: 'ENABLE_MCS_SERVICE_DISCOVERY', type: 'B', default: 'false', description: 'MCS discovery mode: endpoints are discoverable only in their own cluster unless exported through ServiceExport.' },
  { name: 'ENABLE_MULTICLUSTER_HEADLESS', type: 'B', default: 'false', description: 'The DNS table of a headless service resolves to same-network endpoints in any cluster.' },
  { name: 'ENABLE_WASM_TELEMETRY', type: 'B', default: 'false', description: 'Enables Wasm-based telemetry.' },
  { name: 'EXTERNAL_CA', type: 'S', default: null, allowed: ['MESHD_RA_CLUSTER_API', 'MESHD_RA_MESH_API'], description: 'External CA integration type. Allowed values: `MESHD_RA_CLUSTER_API`, `MESHD_RA_MESH_API`.' },
  { name: 'EXTERNAL_MESHD', type: 'B', default: 'false', description: 'One daemon controls remote clusters, including their CA.' },
  { name: 'CLOUD_METADATA', type: 'S', default: null, description: 'Pipe-separated list in the order PROJECT_ID, PROJECT_NUMBER, CLUSTER_NAME, CLUSTER_ZONE.' },
  { name: 'CLOUD_QUOTA_PROJECT', type: 'S', default: null, description: 'Quota project used in requests to cloud APIs.' },
  { name: 'INJECTION_WEBHOOK_CONFIG_NAME', type: 'S', default: 'mesh-sidecar-injector', description: 'Name of the mutating webhook configuration to patch when meshctl is not used.' },
  { name: 'INJECT_ENABLED', type: 'B', default: 'true', description: 'Enables the mutating webhook handler.' },
  { name: 'MESHD_CUSTOM_HOST', type: 'S', default: null, description: 'Custom host name that the daemon puts into its signed server certificate.' },
  { name: 'MESH_AGENT_ENABLE_WASM_REMOTE_LOAD_CONVERSION', type: 'B', default: 'true', description: 'The node agent intercepts ECDS updates, downloads the Wasm module and replaces the remote load with the local file.' },
  { name: 'MESH_BOOTSTRAP', type: 'S', default: null, description: '' },
  { name: 'MESH_DEFAULT_REQUEST_TIMEOUT', type: 'D', default: '0s', description: 'Default HTTP and gRPC request timeout.' },
  { name: 'MESH_DELTA_XDS', type: 'B', default: 'false', description: 'Uses the delta xDS API and sends only changed configs on a resource request. Actual deltas are not yet sent.' },
  { name: 'MESH_GATEWAY_STRIP_HOST_PORT', type: 'B', default: 'false', description: 'A gateway strips any port from the host/authority header before HTTP filters or routing.' },
  { name: 'MESH_GPRC_MAXRECVMSGSIZE', type: 'I', default: '4194304', min: 1, description: 'Maximum receive buffer of a gRPC stream, in bytes.' },
  { name: 'MESH_GPRC_MAXSTREAMS', type: 'I', default: '100000', min: 1, description: 'Maximum number of concurrent gRPC streams.' },
  { name: 'MESH_MULTIROOT_MESH', type: 'B', default: 'false', description: 'Supports certificates signed by more than one trust anchor for `MESH_MUTUAL` mutual TLS.' },
  { name: 'MESH_METRICS_ANNOTATIONS', type: 'S', default: null, description: '' },
  { name: 'JWT_POLICY', type: 'S', default: 'third-party-jwt', description: 'JWT validation policy.' },
  { name: 'JWT_RULE', type: 'S', default: null, description: 'JWT rule used by the daemon\'s authentication.' },
  { name: 'CLUSTER_INGRESS_NS', type: 'S', default: null, description: '' },
  { name: 'CLUSTER_SIGNER', type: 'S', default: null, description: 'Orchestrator CA signer type; valid from orchestrator 1.18.' },
  { name: 'CLUSTER_SERVICE_HOST', type: 'S', default: null, description: 'Orchestrator service host; set automatically when running in-cluster.' },
  { name: 'K_REVISION', type: 'S', default: null, description: 'Revision of a serverless platform; set when running on it.' },
  { name: 'MAX_WORKLOAD_CERT_TTL', type: 'D', default: '2160h0m0s', description: 'Maximum lifetime of issued workload certificates.' },
  { name: 'DISC_CERT_PROVIDER', type: 'S', default: 'meshd', description: 'Provider of the discovery service\'s DNS certificate.' },
  { name: 'DISC_DEBOUNCE_AFTER', type: 'D', default: '100ms', description: 'Delay added to config and registry events for debouncing. A push waits at least this long; further events within it extend the wait, up to DISC_DEBOUNCE_MAX.' },
  { name: 'DISC_DEBOUNCE_MAX', type: 'D', default: '10s', description: 'Longest wait while debouncing; a push is triggered when events never pause for this long.' },
  { name: 'DISC_DISTRIBUTION_HISTORY_RETENTION', type: 'D', default: '1m0s', description: 'How long old versions of distributed config are tracked.' },
  { name: 'DISC_ENABLED_SERVICE_APIS', type: 'B', default: 'true', description: 'Supports the gateway-api resources; their CRDs must also be installed.' },
  { name: 'DISC_ENABLE_ANALYSIS', type: 'B', default: 'false', description: 'Runs analyzers and writes findings to the Status field of mesh resources.' },
  { name: 'DISC_ENABLE_CDS_CACHE', type: 'B', default: 'false', description: 'Caches CDS responses. Depends on DISC_ENABLE_XDS_CACHE.' },
  { name: 'DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING', type: 'B', default: 'true', description: 'Gives each proxy config message a meaningful nonce; the debug interface can then show which proxy holds which config.' },
  { name: 'DISC_ENABLE_CROSS_CLUSTER_WORKLOAD_ENTRY', type: 'B', default: 'false', description: 'Reads workload entries of other clusters, selectable by services in that cluster.' },
  { name: 'DISC_ENABLE_DESTINATION_RULE_INHERITANCE', type: 'B', default: 'false', description: 'Workload-specific destination rules inherit settings from mesh-level and namespace-level rules.' },
  { name: 'DISC_ENABLE_EDS_DEBOUNCE', type: 'B', default: 'true', description: 'EDS pushes take part in debouncing: possibly delayed but fewer.' },
  { name: 'DISC_ENABLE_EDS_FOR_HEADLESS_SERVICES', type: 'B', default: 'false', description: 'Sends endpoints of headless services over EDS so the sidecar can balance among pods. Enable when applications reach all services through a sidecar HTTP proxy port.' },
  { name: 'DISC_ENABLE_FLOW_CONTROL', type: 'B', default: 'false', description: 'Waits for completion of a receive operation before a push. Useful with high push rates per gateway.' },
  { name: 'DISC_ENABLE_GATEWAY_API_STATUS', type: 'B', default: 'true', description: 'Writes status to gateway-api resources.' },
  { name: 'DISC_ENABLE_HEADLESS_SERVICE_POD_LISTENERS', type: 'B', default: 'true', description: 'Generates one outbound listener per pod of a headless service or stateful set. Disable when such services have very many pods.' },
  { name: 'DISC_ENABLE_INBOUND_PASSTHROUGH', type: 'B', default: 'true', description: 'Inbound clusters are original-destination clusters: binding to the pod IP works and localhost does not. When false, requests always go to localhost. Kept for backward compatibility. A Sidecar ingress default-endpoint setting overrides it.' },
  { name: 'DISC_ENABLE_MESH_TAGS', type: 'B', default: 'true', description: 'Trace spans produced by the proxy carry mesh-specific tags.' },
  { name: 'DISC_ENABLE_CLUSTER_SELECT_WORKLOAD_ENTRIES', type: 'B', default: 'true', description: 'Services with selectors select workload entries with matching labels.' },
  { name: 'DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH', type: 'B', default: 'false', description: 'Any upstream cluster may be used with AUTO_PASSTHROUGH. Backward-compatibility only, insecure with untrusted downstreams, to be removed.' },
  { name: 'DISC_ENABLE_MONGO_FILTER', type: 'B', default: 'true', description: 'Injects the proxy\'s mongo network filter into the filter chain.' },
  { name: 'DISC_ENABLE_MYSQL_FILTER', type: 'B', default: 'false', description: 'Injects the proxy\'s mysql network filter.' },
  { name: 'DISC_ENABLE_PROTOCOL_SNIFFING_FOR_INBOUND', type: 'B', default: 'true', description: 'Sniffs the protocol on inbound listeners whose port protocol is unspecified or unsupported.' },
  { name: 'DISC_ENABLE_PROTOCOL_SNIFFING_FOR_OUTBOUND', type: 'B', default: 'true', description: 'Same, for outbound listeners.' },
  { name: 'DISC_ENABLE_REDIS_FILTER', type: 'B', default: 'false', description: 'Injects the proxy\'s redis network filter.' },
  { name: 'DISC_ENABLE_ROUTE_COLLAPSE_OPTIMIZATION', type: 'B', default: 'true', description: 'Merges virtual hosts that have identical routes into one.' },
  { name: 'DISC_ENABLE_SERVICEENTRY_SELECT_PODS', type: 'B', default: 'true', description: 'Service entries with selectors select pods from the cluster.' },
  { name: 'DISC_ENABLE_STATUS', type: 'B', default: 'false', description: 'Updates the Status field of all mesh resources with reconciliation status.' },
  { name: 'DISC_ENABLE_VIRTUAL_SERVICE_DELEGATE', type: 'B', default: 'true', description: 'When false, virtual service delegation is unsupported.' },
  { name: 'DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION', type: 'B', default: 'true', description: 'Auto-registers workload entries from their workload groups when a workload connects over xDS.' },
  { name: 'DISC_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS', type: 'B', default: 'true', description: 'Health-checks workload entries according to the workload group\'s config.' },
  { name: 'DISC_ENABLE_XDS_CACHE', type: 'B', default: 'true', description: 'Caches xDS responses.' },
  { name: 'DISC_ENABLE_XDS_IDENTITY_CHECK', type: 'B', default: 'true', description: 'Authorizes xDS clients so they act only as namespaces they may.' },
  { name: 'DISC_ENDPOINT_TELEMETRY_LABEL', type: 'B', default: 'true', description: 'Adds telemetry metadata to endpoint resources for the telemetry filter.' },
  { name: 'DISC_PROXY_FILTER_STATS', type: 'B', default: 'false', description: 'Collects metrics of proxy-filter operations.' },
  { name: 'DISC_FILTER_GATEWAY_CLUSTER_CONFIG', type: 'B', default: 'false', description: '' },
  { name: 'DISC_FLOW_CONTROL_TIMEOUT', type: 'D', default: '15s', description: 'Upper bound on how long a push is delayed. Depends on DISC_ENABLE_FLOW_CONTROL.' },
  { name: 'DISC_HTTP10', type: 'B', default: 'false', description: 'Allows HTTP 1.0 in outbound HTTP listeners.' },
  { name: 'DISC_HTTP_DELAYED_CLOSE_TIMEOUT', type: 'D', default: '1s', description: 'Delayed-close timeout of downstream HTTP connections. `0s` disables it.' },
  { name: 'DISC_INBOUND_PROTOCOL_DETECTION_TIMEOUT', type: 'D', default: '1s', description: 'Protocol detection timeout of inbound listeners.' },
  { name: 'DISC_JWT_ENABLE_REMOTE_JWKS', type: 'B', default: 'false', description: 'When the JwksUri in a RequestAuthentication is a mesh-cluster URL, the proxy fetches the JWKS instead of the daemon.' },
  { name: 'DISC_JWT_PUB_KEY_REFRESH_INTERVAL', type: 'D', default: '20m0s', description: 'Interval at which the daemon fetches the jwks_uri public keys.' },
  { name: 'DISC_PUSH_THROTTLE', type: 'I', default: '100', min: 1, description: 'Maximum number of concurrent pushes.' },
  { name: 'DISC_REMOTE_CLUSTER_TIMEOUT', type: 'D', default: '30s', description: 'After it expires the daemon may become ready without syncing clusters added through remote secrets. `0` disables this behavior.' },
  { name: 'DISC_SCOPE_GATEWAY_TO_NAMESPACE', type: 'B', default: 'false', description: 'A gateway workload selects only gateway resources of its own namespace.' },
  { name: 'DISC_SIDECAR_USE_REMOTE_ADDRESS', type: 'B', default: 'false', description: 'Sets useRemoteAddress on sidecar outbound listeners.' },
  { name: 'DISC_SKIP_VALIDATE_TRUST_DOMAIN', type: 'B', default: 'false', description: 'Skips checking that the peer is in the same trust domain when mutual TLS is on.' },
  { name: 'DISC_STATUS_BURST', type: 'I', default: '500', min: 0, description: 'Burst rate of status updates when status is enabled.' },
  { name: 'DISC_STATUS_MAX_WORKERS', type: 'I', default: '100', min: 1, description: 'Maximum workers keeping config status current. Fewer workers mean higher status latency.' },
  { name: 'DISC_STATUS_QPS', type: 'F', default: '100', min: 0, description: 'Queries per second of status updates when status is enabled.' },
  { name: 'DISC_STATUS_UPDATE_INTERVAL', type: 'D', default: '500ms', description: 'Interval for updating xDS distribution status.' },
  { name: 'DISC_TRACE_SAMPLING', type: 'F', default: '1', min: 0, max: 100, description: 'Mesh-wide trace sampling percentage.' },
  { name: 'DISC_USE_ENDPOINT_SLICE', type: 'B', default: 'false', description: 'Uses endpoint slices instead of endpoints as the source of service endpoints. The two are mutually exclusive. Requires the orchestrator\'s endpoint-slice controller.' },
  { name: 'DISC_USE_TARGET_PORT_FOR_GATEWAY_ROUTES', type: 'B', default: 'true', description: 'Route names use the gateway service\'s target port rather than its service port.' },
  { name: 'DISC_WORKLOAD_ENTRY_GRACE_PERIOD', type: 'D', default: '10s', description: 'How long an auto-registered workload may stay disconnected from all daemons before its workload entry is removed.' },
  { name: 'DISC_XDS_CACHE_SIZE', type: 'I', default: '60000', min: 0, description: 'Maximum entries in the xDS cache.' },
  { name: 'DISC_XDS_CACHE_STATS', type: 'B', default: 'false', description: 'Collects cache-efficiency metrics.' },
  { name: 'DISC_XDS_SEND_TIMEOUT', type: 'D', default: '0s', description: 'Timeout for sending xDS config to proxies; after it the push is discarded.' },
  { name: 'POD_NAME', type: 'S', default: null, description: '' },
  { name: 'POD_NAMESPACE', type: 'S', default: 'mesh-system', description: '' },
  { name: 'REQUIRE_3P_TOKEN', type: 'B', default: 'false', description: 'Rejects default orchestrator tokens that have no audience. When false they are accepted.' },
  { name: 'REVISION', type: 'S', default: null, description: '' },
  { name: 'REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION', type: 'B', default: 'false', description: 'Readiness probes go to localhost; otherwise to the pod IP.' },
  { name: 'ROOT_CA_DIR', type: 'S', default: './etc/cacerts', description: 'Location of a local or mounted CA root.' },
  { name: 'SHARED_MESH_CONFIG', type: 'S', default: null, description: 'Extra config map with shared mesh config. The standard mesh config takes precedence.' },
  { name: 'SPIFFE_BUNDLE_ENDPOINTS', type: 'S', default: null, description: 'Maps trust domains to SPIFFE bundle endpoints. The daemon fetches the root cert from each and verifies client certs of that trust domain with it. Format: tuples `<trustdomain>|<endpoint>` separated by a double pipe. Not needed for roots issued by the daemon or web-PKI roots. The endpoint must follow the SPIFFE Bundle Endpoint standard.' },
  { name: 'TOKEN_AUDIENCES', type: 'S', default: 'mesh-ca', description: 'Comma-separated audiences; a token passes when it matches any one, before a certificate is issued.' },
  { name: 'TOKEN_ISSUER', type: 'S', default: null, description: 'OIDC token issuer; when set, used to check tokens.' },
  { name: 'UNSAFE_ENABLE_ADMIN_ENDPOINTS', type: 'B', default: 'false', description: 'Exposes dangerous admin endpoints on the debug interface. Not for production.' },
  { name: 'UNSAFE_DISC_ENABLE_RUNTIME_ASSERTIONS', type: 'B', default: 'false', description: 'Extra runtime assertions that are costly and panic on failure. Testing only.' },
  { name: 'USE_REMOTE_CERTS', type: 'B', default: 'false', description: 'Loads CA certs from a remote cluster. Used by an external daemon.' },
  { name: 'VALIDATION_WEBHOOK_CONFIG_NAME', type: 'S', default: 'mesh-mesh-system', description: 'Validating webhook configuration to patch. Empty skips patching with cluster-admin rights.' },
  { name: 'XDS_AUTH', type: 'B', default: 'true', description: 'Authenticates xDS clients.' },
  { name: 'XDS_AUTH_PLAINTEXT', type: 'B', default: 'false', description: 'Authenticates plaintext requests; for a daemon behind a gateway that terminates TLS.' },
] as const satisfies readonly EnvVarSpec[];

type EnvTable = (typeof DAEMON_ENV_VARS)[number];
type EnvValue<V extends EnvTable> = V extends { readonly allowed: readonly (infer A)[] }
  ? A
  : V['type'] extends 'B'
    ? boolean
    : V['type'] extends 'S'
      ? string
      : number;

/** The parsed environment: one read-only key per variable, named exactly as the variable. */
export type DaemonEnv = {
  readonly [V in EnvTable as V['name']]: V['default'] extends null ? EnvValue<V> | undefined : EnvValue<V>;
};

export type DaemonEnvName = keyof DaemonEnv;

/** Converts one raw value by the variable's type and limits; throws an Error describing the value. */
function convert(spec: EnvVarSpec, text: string): string | boolean | number {
  switch (spec.type) {
    case 'S':
      if (spec.allowed && !spec.allowed.includes(text)) {
        throw new Error(`invalid value ${JSON.stringify(text)} (allowed: ${spec.allowed.join(', ')})`);
      }
      return text;
    case 'B':
      return parseBool(text);
    case 'D':
      return parseDuration(text);
    case 'I':
      return checkRange(parseInteger(text), spec.min, spec.max);
    case 'F':
      return checkRange(parseDecimal(text), spec.min, spec.max);
  }
}

/** A zod step that turns text into a value with `parse`, recording its error as an issue. */
export function parsedText<T>(parse: (text: string) => T) {
  return z.string().transform((text, ctx): T => {
    try {
      return parse(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
}

function variableSchema(spec: EnvVarSpec) {
  const emptyIsUnset = spec.type !== 'S' || spec.allowed !== undefined;
  const value = parsedText((text) => convert(spec, text));
  return z
    .string()
    .optional()
    .transform((raw) => (raw === undefined || (raw === '' && emptyIsUnset) ? (spec.default ?? undefined) : raw))
    .pipe(spec.default === null ? value.optional() : value);
}

let schema: z.ZodType<DaemonEnv, Record<string, string | undefined>> | undefined;

function daemonEnvSchema() {
  schema ??= z.object(
    Object.fromEntries(DAEMON_ENV_VARS.map((spec) => [spec.name, variableSchema(spec)])),
  ) as unknown as z.ZodType<DaemonEnv, Record<string, string | undefined>>;
  return schema;
}

/**
 * Reads every daemon variable from `record` (normally `process.env`; other keys are ignored).
 * Throws `ConfigError` listing each bad variable as `NAME: problem`.
 */
export function parseDaemonEnv(record: Readonly<Record<string, string | undefined>>): DaemonEnv {
  const input: Record<string, string | undefined> = {};
  for (const spec of DAEMON_ENV_VARS) input[spec.name] = record[spec.name];
  const result = daemonEnvSchema().safeParse(input);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  const refused = NOT_HONOURED.filter(([name, ok]) => !ok(result.data[name])).map(([name, , why]) => `${name}: ${why}`);
  if (refused.length > 0) throw new ConfigError(refused);
  return Object.freeze(result.data);
}

/**
 * Values the daemon parses but cannot honour yet: refused at start-up by name rather than ignored.
 * DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH: AUTO_PASSTHROUGH gateways route only to the SNI-DNAT clusters
 * of mesh services (`outbound_.<port>_.<subset>_.<host>`, src/xds/generators/gateway.ts); the legacy,
 * insecure mode that lets a client's SNI name any upstream cluster is not built (docs/adr/0155).
 */
const NOT_HONOURED: ReadonlyArray<readonly [keyof DaemonEnv, (v: unknown) => boolean, string]> = [
  [
    'DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH',
    (v) => v === false,
    'true is not supported: AUTO_PASSTHROUGH gateways route only to mesh services by their SNI-DNAT names, and the legacy mode that lets a client\'s SNI name any upstream cluster (insecure with untrusted downstreams) is not built; unset it or set false',
  ],
];

/** Help text listing every variable with type, default and description, one per paragraph. */
export function describeDaemonEnv(): string {
  const typeNames: Record<EnvType, string> = { S: 'string', B: 'bool', D: 'duration', I: 'int', F: 'float' };
  return DAEMON_ENV_VARS.map((spec: EnvVarSpec) => {
    const head = `  ${spec.name} (${typeNames[spec.type]}${spec.default === null ? '' : `, default ${spec.default}`})`;
    return spec.description ? `${head}\n      ${spec.description.replace(/`/g, '')}` : head;
  }).join('\n');
}
