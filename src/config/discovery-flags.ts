/**
 * Flags of `mesh-discovery discovery` (spec "mesh-discovery discovery flags" and "Network
 * listeners"). The table below is their single source: commander registers them from it, zod
 * validates and converts the values, and `--help` shows each default from it.
 *
 * Commander holds no defaults: the options object it produces carries only what the user gave,
 * so `discoveryOptionsFrom` can tell "not set" apart (needed for `--namespace`, which falls back
 * to POD_NAMESPACE, and `--clusterID`, which falls back to CLUSTER_ID) and fills in the rest
 * from the table, through the same conversion as user input.
 */
import { Command, CommanderError, Option } from 'commander';
import { z } from 'zod';
import { ConfigError } from '../util/config-error.js';
import { parseDaemonEnv, parsedText, type DaemonEnv } from './daemon-env.js';
import { LOG_FLAG_DEFAULTS, checkLogFlags, type LogOptions } from '../log/levels.js';
import { parseDuration } from '../util/duration.js';
import { checkRange, parseBool, parseDecimal, parseInteger } from '../util/parse.js';

/** Value types as the spec's flag table names them. */
export type FlagType = 'S' | 'B' | 'D' | 'I' | 'uint16' | 'float32' | 'stringSlice' | 'stringArray';

export interface FlagSpec {
  /** Long name with dashes, exactly as the spec spells it. */
  readonly flag: string;
  readonly short?: string;
  readonly type: FlagType;
  /** The default as a user would type it (`30s`, `160`); `false` for B; a list for slices and arrays. */
  readonly default: string | boolean | readonly string[];
  readonly description: string;
  /** The only values allowed (for each element of a slice). */
  readonly choices?: readonly string[];
  /** A listen address (`[host]:port`, empty to disable). */
  readonly address?: boolean;
}

export const REGISTRIES = ['Cluster', 'Mock'] as const;
export type Registry = (typeof REGISTRIES)[number];

/** Cipher suites the spec lists as preferred. */
export const PREFERRED_CIPHER_SUITES = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_RSA_WITH_3DES_EDE_CBC_SHA',
  'TLS_RSA_WITH_AES_128_CBC_SHA',
  'TLS_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_RSA_WITH_AES_256_CBC_SHA',
  'TLS_RSA_WITH_AES_256_GCM_SHA384',
] as const;

/** Cipher suites the spec classes insecure: accepted, but worth a warning at start-up. */
export const INSECURE_CIPHER_SUITES = [
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256',
  'TLS_ECDHE_ECDSA_WITH_RC4_128_SHA',
  'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256',
  'TLS_ECDHE_RSA_WITH_RC4_128_SHA',
  'TLS_RSA_WITH_AES_128_CBC_SHA256',
  'TLS_RSA_WITH_RC4_128_SHA',
] as const;

export type CipherSuite = (typeof PREFERRED_CIPHER_SUITES)[number] | (typeof INSECURE_CIPHER_SUITES)[number];

/**
 * Every flag of the discovery command, in the spec's order, then the two listener-only flags.
 * The `--log_*` defaults come from the log module, which applies them to other callers too.
 */
export const DISCOVERY_FLAGS: readonly FlagSpec[] = [
  { flag: '--caCertFile', type: 'S', default: '', description: 'File with the x509 server CA certificate.' },
  { flag: '--clusterID', type: 'S', default: 'Cluster', description: 'ID of the cluster this daemon lives in; falls back to CLUSTER_ID when not set.' },
  { flag: '--clusterRegistriesNamespace', type: 'S', default: 'mesh-system', description: 'Namespace of the config map holding cluster configs.' },
  { flag: '--configDir', type: 'S', default: '', description: 'Directory watched for config YAML files. When set, the files replace the CRD client as the config source.' },
  { flag: '--ctrlz_address', type: 'S', default: 'localhost', description: 'IP address for the introspection listener; `*` means all addresses.' },
  { flag: '--ctrlz_port', type: 'uint16', default: '9876', description: 'Port for the introspection listener.' },
  { flag: '--domain', type: 'S', default: 'cluster.local', description: 'DNS domain suffix.' },
  { flag: '--grpcAddr', type: 'S', default: ':15010', address: true, description: 'Discovery service gRPC address.' },
  { flag: '--httpAddr', type: 'S', default: ':8080', address: true, description: 'Discovery service HTTP address.' },
  { flag: '--httpsAddr', type: 'S', default: ':15017', address: true, description: 'Webhook server (injection and validation) HTTPS address.' },
  { flag: '--keepaliveInterval', type: 'D', default: '30s', description: 'Idle time after which the peer is pinged.' },
  { flag: '--keepaliveMaxServerConnectionAge', type: 'D', default: '2562047h47m16.854775807s', description: 'Longest a server connection stays open before a graceful close.' },
  { flag: '--keepaliveTimeout', type: 'D', default: '10s', description: 'Wait after a keepalive ping before the connection is closed for lack of activity.' },
  { flag: '--clusterconfig', type: 'S', default: '', description: 'Use a config file instead of in-cluster configuration.' },
  { flag: '--clusterApiBurst', type: 'I', default: '160', description: 'Maximum burst when calling the orchestrator API.' },
  { flag: '--clusterApiQPS', type: 'float32', default: '80', description: 'Maximum queries per second to the orchestrator API.' },
  { flag: '--log_as_json', type: 'B', default: false, description: 'Format log output as JSON instead of console text.' },
  { flag: '--log_caller', type: 'S', default: LOG_FLAG_DEFAULTS.log_caller, description: 'Comma-separated scopes whose log lines include caller info.' },
  { flag: '--log_output_level', type: 'S', default: LOG_FLAG_DEFAULTS.log_output_level, description: 'Comma-separated `<scope>:<level>` pairs giving minimum output level per scope.' },
  { flag: '--log_rotate', type: 'S', default: LOG_FLAG_DEFAULTS.log_rotate, description: 'Path of an optional rotating log file.' },
  { flag: '--log_rotate_max_age', type: 'I', default: String(LOG_FLAG_DEFAULTS.log_rotate_max_age), description: 'Days before rotation; 0 means no limit.' },
  { flag: '--log_rotate_max_backups', type: 'I', default: String(LOG_FLAG_DEFAULTS.log_rotate_max_backups), description: 'Backups kept; 0 means no limit.' },
  { flag: '--log_rotate_max_size', type: 'I', default: String(LOG_FLAG_DEFAULTS.log_rotate_max_size), description: 'Size of a log file, stated in megabytes, beyond which it is rotated.' },
  { flag: '--log_stacktrace_level', type: 'S', default: LOG_FLAG_DEFAULTS.log_stacktrace_level, description: 'Comma-separated `<scope>:<level>` pairs giving the level at which stack traces are captured.' },
  { flag: '--log_target', type: 'stringArray', default: LOG_FLAG_DEFAULTS.log_target, description: 'Output paths; also the special values `stdout` and `stderr`.' },
  { flag: '--meshConfig', type: 'S', default: './etc/mesh/config/mesh', description: 'Mesh config file; a default mesh is used if absent.' },
  { flag: '--namespace', short: '-n', type: 'S', default: 'mesh-system', description: 'Namespace where the controller lives; falls back to POD_NAMESPACE when not set.' },
  { flag: '--networksConfig', type: 'S', default: '/etc/mesh/config/meshNetworks', description: 'Mesh networks config file; a default is used if absent.' },
  { flag: '--plugins', type: 'stringSlice', default: ['ext_authz', 'authn', 'authz'], description: 'Networking plugins to enable.' },
  { flag: '--profile', type: 'B', default: false, description: 'Enable profiling interface at host:port/debug/pprof.' },
  { flag: '--registries', type: 'stringSlice', default: ['Cluster'], choices: REGISTRIES, description: 'Registries to read from; choose from `Cluster`, `Mock`.' },
  { flag: '--resync', type: 'D', default: '1m0s', description: 'Controller resync interval.' },
  { flag: '--shutdownDuration', type: 'D', default: '10s', description: 'Time the server needs for a graceful stop.' },
  { flag: '--tls-cipher-suites', type: 'stringSlice', default: [], choices: [...PREFERRED_CIPHER_SUITES, ...INSECURE_CIPHER_SUITES], description: "Cipher suites of the daemon's TLS server; when omitted the runtime defaults apply." },
  { flag: '--tlsCertFile', type: 'S', default: '', description: 'File with the x509 server certificate.' },
  { flag: '--tlsKeyFile', type: 'S', default: '', description: 'File with the x509 private key matching `--tlsCertFile`.' },
  { flag: '--secureGRPCAddr', type: 'S', default: ':15012', address: true, description: 'Secured discovery gRPC address.' },
  { flag: '--monitoringAddr', type: 'S', default: ':15014', address: true, description: 'Self-monitoring information (metrics) address.' },
];

/** Flags whose unset value comes from an environment variable rather than from the table. */
const ENV_FALLBACK: Readonly<Record<string, 'POD_NAMESPACE' | 'CLUSTER_ID'>> = {
  '--namespace': 'POD_NAMESPACE',
  '--clusterID': 'CLUSTER_ID',
};

/** A listen address; `host` is empty for all interfaces. */
export interface ListenAddr {
  readonly host: string;
  readonly port: number;
}

/** Options of the discovery command, validated; durations in milliseconds. */
export interface DiscoveryOptions {
  readonly caCertFile: string;
  readonly clusterID: string;
  readonly clusterRegistriesNamespace: string;
  readonly configDir: string;
  readonly ctrlzAddress: string;
  readonly ctrlzPort: number;
  readonly domain: string;
  /** Listeners; `null` when the address flag was set empty (listener off). */
  readonly grpcAddr: ListenAddr | null;
  readonly httpAddr: ListenAddr | null;
  readonly httpsAddr: ListenAddr | null;
  readonly secureGRPCAddr: ListenAddr | null;
  readonly monitoringAddr: ListenAddr | null;
  readonly keepaliveInterval: number;
  readonly keepaliveMaxServerConnectionAge: number;
  readonly keepaliveTimeout: number;
  readonly clusterconfig: string;
  readonly clusterApiBurst: number;
  readonly clusterApiQPS: number;
  /** All `--log_*` flags, ready for `configureLogging`. */
  readonly log: LogOptions;
  readonly meshConfig: string;
  readonly namespace: string;
  readonly networksConfig: string;
  readonly plugins: readonly string[];
  readonly profile: boolean;
  readonly registries: readonly Registry[];
  readonly resync: number;
  readonly shutdownDuration: number;
  /** Empty: the runtime's defaults. */
  readonly tlsCipherSuites: readonly CipherSuite[];
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
}

/**
 * The daemon's entry point, implemented by src/bootstrap/discovery.ts and called by the CLI with
 * validated options. It owns the process from there, logging included (`configureLogging(opts.log)`).
 */
export type RunDiscovery = (opts: DiscoveryOptions, env: DaemonEnv) => Promise<void>;

/**
 * Parses `host:port`, `[ipv6]:port` or `:port` (all interfaces). An empty string gives `null`
 * (listener disabled). Throws an Error describing the problem.
 */
export function parseListenAddr(text: string): ListenAddr | null {
  if (text === '') return null;
  const colon = text.lastIndexOf(':');
  if (colon < 0) throw new Error(`invalid address ${JSON.stringify(text)}: missing port (want [host]:port)`);
  let host = text.slice(0, colon);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  else if (host.includes(':')) throw new Error(`invalid address ${JSON.stringify(text)}: IPv6 hosts need brackets`);
  const portText = text.slice(colon + 1);
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port <= 65535)) throw new Error(`invalid address ${JSON.stringify(text)}: bad port ${JSON.stringify(portText)}`);
  return { host, port };
}

const VALUE_NAME: Readonly<Record<FlagType, string>> = {
  S: '<string>',
  B: '[bool]',
  D: '<duration>',
  I: '<int>',
  uint16: '<uint16>',
  float32: '<float32>',
  stringSlice: '<strings>',
  stringArray: '<stringArray>',
};

function defaultText(spec: FlagSpec): string {
  if (ENV_FALLBACK[spec.flag]) return `$${ENV_FALLBACK[spec.flag]}, else ${spec.default as string}`;
  if (Array.isArray(spec.default)) return `[${spec.default.join(',')}]`;
  return String(spec.default);
}

function splitList(text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** Commander option for a table entry, with no default value (see the module comment). */
function flagOption(spec: FlagSpec): Option {
  const names = `${spec.short ? `${spec.short}, ` : ''}${spec.flag} ${VALUE_NAME[spec.type]}`;
  const shown = defaultText(spec);
  const description = spec.description.replace(/`/g, '');
  const option = new Option(names, shown === '' || shown === '[]' ? description : `${description} (default ${shown})`);
  // Short choice lists go to help and completion (the cipher suites would swamp the help);
  // either way the values are checked in validation.
  if (spec.choices && spec.choices.length <= 10) option.argChoices = [...spec.choices];
  if (spec.type === 'stringSlice') option.argParser((value: string, previous?: string[]) => [...(previous ?? []), ...splitList(value)]);
  if (spec.type === 'stringArray') option.argParser((value: string, previous?: string[]) => [...(previous ?? []), value]);
  return option;
}

/** Adds every discovery flag to `cmd`. */
export function registerDiscoveryFlags(cmd: Command): Command {
  for (const spec of DISCOVERY_FLAGS) cmd.addOption(flagOption(spec));
  return cmd;
}

function valueSchema(spec: FlagSpec): z.ZodType {
  switch (spec.type) {
    case 'S':
      return spec.address ? parsedText(parseListenAddr) : z.string();
    case 'B':
      // `--flag` alone gives true; `--flag=false` gives the text.
      return z.preprocess((v) => (typeof v === 'boolean' ? String(v) : v), parsedText(parseBool));
    case 'D':
      return parsedText((s) => {
        const ms = parseDuration(s);
        if (ms < 0) throw new Error(`negative duration ${JSON.stringify(s)}`);
        return ms;
      });
    case 'I':
      return parsedText((s) => checkRange(parseInteger(s), 0));
    case 'uint16':
      return parsedText((s) => checkRange(parseInteger(s), 0, 65535));
    case 'float32':
      return parsedText((s) => checkRange(parseDecimal(s), 0));
    case 'stringSlice':
    case 'stringArray': {
      const choices = spec.choices;
      const element = choices
        ? z.string().refine((v) => choices.includes(v), {
            error: (issue) => `invalid value ${JSON.stringify(issue.input)} (choose from ${choices.join(', ')})`,
          })
        : z.string();
      return z.array(element);
    }
  }
}

/** Attribute name commander gives the flag's value (`--tls-cipher-suites` is `tlsCipherSuites`). */
const attributeOf = (spec: FlagSpec): string => new Option(spec.flag).attributeName();

let schema: z.ZodType<Record<string, unknown>> | undefined;
let flagByAttribute: ReadonlyMap<string, string> | undefined;

function discoverySchema() {
  if (schema === undefined) {
    const shape: Record<string, z.ZodType> = {};
    const names = new Map<string, string>();
    for (const spec of DISCOVERY_FLAGS) {
      const key = attributeOf(spec);
      names.set(key, spec.flag);
      const value = valueSchema(spec);
      shape[key] = ENV_FALLBACK[spec.flag] ? value.optional() : value.prefault(spec.default);
    }
    schema = z.object(shape) as unknown as z.ZodType<Record<string, unknown>>;
    flagByAttribute = names;
  }
  return { schema, flagByAttribute: flagByAttribute as ReadonlyMap<string, string> };
}

/**
 * Validates the discovery command's options (as `cmd.opts()` returns them) and fills defaults.
 * Throws `ConfigError` listing every bad flag as `--flag: problem`.
 */
export function discoveryOptionsFrom(opts: Readonly<Record<string, unknown>>, env: DaemonEnv): DiscoveryOptions {
  const { schema: shape, flagByAttribute: flags } = discoverySchema();
  const result = shape.safeParse(opts);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => `${flags.get(String(issue.path[0])) ?? String(issue.path[0])}: ${issue.message}`),
    );
  }
  // Each value has the type its table entry's schema produces; `never` lets it fill its typed field.
  const v = result.data as Record<string, never>;
  const logCheck = checkLogFlags({
    log_output_level: v.log_output_level,
    log_stacktrace_level: v.log_stacktrace_level,
    log_caller: v.log_caller,
    log_as_json: v.log_as_json,
    log_target: v.log_target,
    log_rotate: v.log_rotate,
    log_rotate_max_size: v.log_rotate_max_size,
    log_rotate_max_age: v.log_rotate_max_age,
    log_rotate_max_backups: v.log_rotate_max_backups,
  });
  if (logCheck.issues.length > 0) throw new ConfigError(logCheck.issues);
  return Object.freeze({
    caCertFile: v.caCertFile,
    clusterID: v.clusterID || env.CLUSTER_ID,
    clusterRegistriesNamespace: v.clusterRegistriesNamespace,
    configDir: v.configDir,
    ctrlzAddress: v.ctrlz_address,
    ctrlzPort: v.ctrlz_port,
    domain: v.domain,
    grpcAddr: v.grpcAddr,
    httpAddr: v.httpAddr,
    httpsAddr: v.httpsAddr,
    secureGRPCAddr: v.secureGRPCAddr,
    monitoringAddr: v.monitoringAddr,
    keepaliveInterval: v.keepaliveInterval,
    keepaliveMaxServerConnectionAge: v.keepaliveMaxServerConnectionAge,
    keepaliveTimeout: v.keepaliveTimeout,
    clusterconfig: v.clusterconfig,
    clusterApiBurst: v.clusterApiBurst,
    clusterApiQPS: v.clusterApiQPS,
    log: logCheck.options,
    meshConfig: v.meshConfig,
    namespace: v.namespace || env.POD_NAMESPACE,
    networksConfig: v.networksConfig,
    plugins: v.plugins,
    profile: v.profile,
    registries: v.registries,
    resync: v.resync,
    shutdownDuration: v.shutdownDuration,
    tlsCipherSuites: v.tlsCipherSuites,
    tlsCertFile: v.tlsCertFile,
    tlsKeyFile: v.tlsKeyFile,
  });
}

/**
 * Reads the environment and the discovery options together, reporting the problems of both in
 * one `ConfigError`. With a bad environment the flags are still checked, against the defaults.
 */
export function loadDiscoveryConfig(
  opts: Readonly<Record<string, unknown>>,
  record: Readonly<Record<string, string | undefined>>,
): { options: DiscoveryOptions; env: DaemonEnv } {
  const issues: string[] = [];
  let env: DaemonEnv;
  try {
    env = parseDaemonEnv(record);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    issues.push(...err.issues);
    env = parseDaemonEnv({ POD_NAMESPACE: record.POD_NAMESPACE, CLUSTER_ID: record.CLUSTER_ID });
  }
  try {
    const options = discoveryOptionsFrom(opts, env);
    if (issues.length === 0) return { options, env };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    issues.push(...err.issues);
  }
  throw new ConfigError(issues);
}

/**
 * Parses discovery command-line arguments (without the command name) and the environment the
 * way `mesh-discovery discovery` does, without starting anything. Throws `ConfigError`.
 */
export function parseDiscoveryArgs(
  argv: readonly string[],
  record: Readonly<Record<string, string | undefined>> = {},
): { options: DiscoveryOptions; env: DaemonEnv } {
  const cmd = registerDiscoveryFlags(new Command('discovery'))
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} });
  try {
    cmd.parse([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) throw new ConfigError(err.message.replace(/^error: /, ''));
    throw err;
  }
  return loadDiscoveryConfig(cmd.opts(), record);
}
