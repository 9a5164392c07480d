import type { DaemonEnv } from '../config/daemon-env.js';
import type { ListenAddr as ListenAddress } from '../config/discovery-flags.js';
import type { FeatureFlags } from '../model/push-context.js';
import type { GeneratorSettings } from '../xds/generators/types.js';
import type { AdsOptions } from '../xds/ads-server.js';
import type { SecuritySettings } from '../security/settings.js';

/** What the running daemon needs, resolved from flags and environment (see ./from-options.ts). */
export interface DaemonConfig {
  readonly grpcAddr: ListenAddress;
  readonly httpAddr: ListenAddress;
  readonly monitoringAddr: ListenAddress;
  readonly debugOnHttp: boolean;
  /** UNSAFE_ENABLE_ADMIN_ENDPOINTS: the debug views on --httpAddr answer non-loopback clients too. */
  readonly debugRemote?: boolean;
  /** ControlZ (`--ctrlz_address`, `--ctrlz_port`; host '' = all addresses); absent: not served. */
  readonly ctrlz?: { readonly host: string; readonly port: number };
  /** `--profile`: CPU profiles and heap snapshots under ControlZ's `/debug/pprof/`. */
  readonly profile?: boolean;
  readonly configDir?: string;
  readonly registries: ReadonlyArray<'Cluster' | 'Mock'>;
  readonly meshConfigFile: string;
  /** `--networksConfig`: mesh networks file (used when it exists). */
  readonly networksConfigFile?: string;
  readonly domain: string;
  readonly clusterId: string;
  readonly namespace: string;
  readonly shutdownMs: number;
  readonly keepalive: { readonly intervalMs: number; readonly timeoutMs: number; readonly maxConnectionAgeMs: number };
  readonly grpcMaxStreams: number;
  readonly grpcMaxRecvMsgSize: number;
  readonly debounceAfterMs: number;
  readonly debounceMaxMs: number;
  readonly edsDebounce: boolean;
  readonly xdsCache: { readonly enabled: boolean; readonly size: number; readonly cds: boolean; readonly stats: boolean };
  readonly features: FeatureFlags;
  readonly generator: GeneratorSettings;
  /** The JWKS resolver (docs/adr/0100): DISC_JWT_PUB_KEY_REFRESH_INTERVAL. */
  readonly jwks: { readonly refreshMs: number };
  readonly ads: Omit<AdsOptions, 'controlPlaneId'>;
  readonly podName: string;
  /** Workload identity: CA, certificate service, secured port, xDS authentication (src/security/settings.ts). */
  readonly security: SecuritySettings;
  /** Start-up notes about the identity settings (logged). */
  readonly securityNotes?: ReadonlyArray<string>;
  /** Identity settings that work, but less than their names promise (logged as warnings). */
  readonly securityWarnings?: ReadonlyArray<string>;
  /**
   * The webhook server (`--httpsAddr`): null when it is off (empty flag, or no serving certificate;
   * a note says why). INJECT_ENABLED, the configurations whose caBundle meshd keeps, and the
   * injection settings of the daemon's environment.
   */
  readonly webhooks: {
    readonly addr: ListenAddress | null;
    readonly injectEnabled: boolean;
    readonly injectionConfigName: string;
    readonly validationConfigName: string;
    readonly probeLocalhost: boolean;
    readonly legacyFsGroup: boolean;
  };
  /** The environment as parsed, for the parts that read many variables (controllers). */
  readonly env: DaemonEnv;
  /** The Kubernetes side, used with `--registries Cluster`. */
  readonly cluster: {
    readonly kubeconfig: string;
    readonly qps: number;
    readonly burst: number;
    readonly resyncMs: number;
    readonly useEndpointSlices: boolean;
    readonly edsForHeadless: boolean;
    readonly selectWorkloadEntries: boolean;
    /** DISC_ENABLED_SERVICE_APIS: read the gateway-api kinds (when their CRDs are served). */
    readonly serviceApis: boolean;
    /** `--clusterRegistriesNamespace`: where the remote-cluster Secrets are. */
    readonly registriesNamespace: string;
    /** DISC_REMOTE_CLUSTER_TIMEOUT in ms (0: wait for remote clusters without limit). */
    readonly remoteSyncTimeoutMs: number;
  };
}
