import { Command } from 'commander';
import { ConfigError } from '../../src/util/config-error.js';
import { parseDaemonEnv } from '../../src/config/daemon-env.js';
import {
  DISCOVERY_FLAGS,
  INSECURE_CIPHER_SUITES,
  PREFERRED_CIPHER_SUITES,
  discoveryOptionsFrom,
  parseDiscoveryArgs,
  parseListenAddr,
  registerDiscoveryFlags,
} from '../../src/config/discovery-flags.js';
import { MAX_DURATION_MS } from '../../src/util/duration.js';
import { DAEMON_SPEC, plain, specTable } from './spec-tables.js';
import fs from 'node:fs';

/** The spec's default cell in the form the table keeps it. */
function specDefault(type: string, cell: string): unknown {
  const text = plain(cell);
  if (type === 'B') return false; // blank in the spec: off
  if (text === 'empty') return '';
  if (type === 'stringSlice' || type === 'stringArray') return text === '[]' ? [] : text.slice(1, -1).split(',');
  return text;
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('no error thrown');
}

describe('discovery flag table', () => {
  const flagRows = specTable('### `mesh-discovery discovery` flags');
  const listenerRows = specTable('### Network listeners');

  it('has every flag of the spec flag table with its short name, type and default', () => {
    expect(flagRows.length).toBeGreaterThan(30);
    for (const [flagCell, shortCell, type, dflt] of flagRows) {
      const flag = plain(flagCell);
      const spec = DISCOVERY_FLAGS.find((f) => f.flag === flag);
      expect({ flag, found: spec !== undefined }).toEqual({ flag, found: true });
      expect({ flag, short: spec?.short ?? '', type: spec?.type, default: spec?.default }).toEqual({
        flag,
        short: plain(shortCell),
        type,
        default: specDefault(type, dflt),
      });
    }
  });

  it('has every listener flag with its default, and nothing beyond the two tables', () => {
    const listed = new Set(flagRows.map((r) => plain(r[0])));
    for (const [, flagCell, dfltCell] of listenerRows) {
      const flags = plain(flagCell).split(' / ');
      const defaults = plain(dfltCell).split(' / ');
      flags.forEach((flag, i) => {
        listed.add(flag);
        const spec = DISCOVERY_FLAGS.find((f) => f.flag === flag);
        expect({ flag, default: spec?.default }).toEqual({ flag, default: defaults[i] === 'off' ? false : defaults[i] });
      });
    }
    expect(DISCOVERY_FLAGS.map((f) => f.flag).sort()).toEqual([...listed].sort());
  });

  it('accepts exactly the cipher suites the spec lists', () => {
    const text = fs.readFileSync(DAEMON_SPEC, 'utf8');
    const listed = [...text.matchAll(/^- (TLS_[A-Z0-9_]+)$/gm)].map((m) => m[1]);
    expect([...PREFERRED_CIPHER_SUITES, ...INSECURE_CIPHER_SUITES]).toEqual(listed);
  });

  it('registers every flag on a command', () => {
    const cmd = registerDiscoveryFlags(new Command('discovery'));
    const longs = cmd.options.map((o) => o.long);
    expect(longs).toEqual(DISCOVERY_FLAGS.map((f) => f.flag));
    expect(cmd.options.find((o) => o.long === '--namespace')?.short).toBe('-n');
  });
});

describe('parseListenAddr', () => {
  it.each([
    [':15010', { host: '', port: 15010 }],
    ['127.0.0.1:8080', { host: '127.0.0.1', port: 8080 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['[::1]:15012', { host: '::1', port: 15012 }],
    ['', null],
  ])('%j', (text, addr) => {
    expect(parseListenAddr(text)).toEqual(addr);
  });

  it.each(['15010', ':', ':http', ':70000', '::1:80', 'host:-1'])('rejects %j', (text) => {
    expect(() => parseListenAddr(text)).toThrow(/invalid address/);
  });
});

describe('discovery options', () => {
  it('fills every default of the spec', () => {
    const { options, env } = parseDiscoveryArgs([]);
    expect(env.POD_NAMESPACE).toBe('mesh-system');
    expect(options).toMatchObject({
      caCertFile: '',
      clusterID: 'Cluster',
      clusterRegistriesNamespace: 'mesh-system',
      configDir: '',
      ctrlzAddress: 'localhost',
      ctrlzPort: 9876,
      domain: 'cluster.local',
      grpcAddr: { host: '', port: 15010 },
      httpAddr: { host: '', port: 8080 },
      httpsAddr: { host: '', port: 15017 },
      secureGRPCAddr: { host: '', port: 15012 },
      monitoringAddr: { host: '', port: 15014 },
      keepaliveInterval: 30_000,
      keepaliveMaxServerConnectionAge: MAX_DURATION_MS,
      keepaliveTimeout: 10_000,
      clusterconfig: '',
      clusterApiBurst: 160,
      clusterApiQPS: 80,
      meshConfig: './etc/mesh/config/mesh',
      namespace: 'mesh-system',
      networksConfig: '/etc/mesh/config/meshNetworks',
      plugins: ['ext_authz', 'authn', 'authz'],
      profile: false,
      registries: ['Cluster'],
      resync: 60_000,
      shutdownDuration: 10_000,
      tlsCipherSuites: [],
      tlsCertFile: '',
      tlsKeyFile: '',
    });
    expect(options.log).toMatchObject({
      outputLevels: { fallback: 'info', scopes: {} },
      stacktraceLevels: { fallback: 'none', scopes: {} },
      asJson: false,
      targets: ['stdout'],
      rotate: '',
      rotateMaxSizeMB: 104857600,
      rotateMaxAgeDays: 30,
      rotateMaxBackups: 1000,
    });
    expect(options.log.callerScopes.size).toBe(0);
    expect(Number.isFinite(options.keepaliveMaxServerConnectionAge)).toBe(true);
    expect(Object.isFrozen(options)).toBe(true);
  });

  it('reads flags of every type', () => {
    const { options } = parseDiscoveryArgs([
      '--grpcAddr', '127.0.0.1:0',
      '--httpAddr=:9090',
      '--monitoringAddr', '',
      '--keepaliveInterval', '1m',
      '--clusterApiQPS', '12.5',
      '--clusterApiBurst=5',
      '--ctrlz_port', '0',
      '--registries', 'Cluster,Mock',
      '--registries=Mock',
      '--plugins', 'authn',
      '--log_target', 'stderr',
      '--log_target', '/tmp/a,b.log',
      '--log_output_level', 'default:warn,ads:debug',
      '--log_caller', 'ads,model',
      '--log_as_json',
      '--profile=false',
      '--tls-cipher-suites', 'TLS_AES_128_GCM_SHA256,TLS_RSA_WITH_RC4_128_SHA',
      '-n', 'other',
      '--clusterID', 'east',
    ]);
    expect(options.grpcAddr).toEqual({ host: '127.0.0.1', port: 0 });
    expect(options.httpAddr).toEqual({ host: '', port: 9090 });
    expect(options.monitoringAddr).toBeNull();
    expect(options.keepaliveInterval).toBe(60_000);
    expect(options.clusterApiQPS).toBe(12.5);
    expect(options.clusterApiBurst).toBe(5);
    expect(options.ctrlzPort).toBe(0);
    expect(options.registries).toEqual(['Cluster', 'Mock', 'Mock']);
    expect(options.plugins).toEqual(['authn']);
    expect(options.log.targets).toEqual(['stderr', '/tmp/a,b.log']);
    expect(options.log.outputLevels).toEqual({ fallback: 'warn', scopes: { ads: 'debug' } });
    expect([...options.log.callerScopes]).toEqual(['ads', 'model']);
    expect(options.log.asJson).toBe(true);
    expect(options.profile).toBe(false);
    expect(options.tlsCipherSuites).toEqual(['TLS_AES_128_GCM_SHA256', 'TLS_RSA_WITH_RC4_128_SHA']);
    expect(options.namespace).toBe('other');
    expect(options.clusterID).toBe('east');
  });

  it('takes --namespace from POD_NAMESPACE and --clusterID from CLUSTER_ID when not set', () => {
    const record = { POD_NAMESPACE: 'from-env', CLUSTER_ID: 'west' };
    expect(parseDiscoveryArgs([], record).options).toMatchObject({ namespace: 'from-env', clusterID: 'west' });
    expect(parseDiscoveryArgs(['--namespace', 'flag', '--clusterID', 'c1'], record).options).toMatchObject({ namespace: 'flag', clusterID: 'c1' });
    expect(parseDiscoveryArgs(['-n', ''], record).options.namespace).toBe('from-env');
  });

  it.each([
    [['--keepaliveInterval', 'x'], '--keepaliveInterval: invalid duration "x"'],
    [['--resync', '-1s'], '--resync: negative duration "-1s"'],
    [['--registries', 'Cluster,Foo'], '--registries: invalid value "Foo" (choose from Cluster, Mock)'],
    [['--tls-cipher-suites', 'TLS_NULL'], '--tls-cipher-suites: invalid value "TLS_NULL"'],
    [['--ctrlz_port', '65536'], '--ctrlz_port: 65536 is out of range: must be between 0 and 65535'],
    [['--ctrlz_port', '1.5'], '--ctrlz_port: invalid integer "1.5"'],
    [['--clusterApiBurst', 'lots'], '--clusterApiBurst: invalid integer "lots"'],
    [['--clusterApiQPS', 'x'], '--clusterApiQPS: invalid number "x"'],
    [['--grpcAddr', '15010'], '--grpcAddr: invalid address "15010": missing port'],
    [['--profile=maybe'], '--profile: invalid boolean "maybe"'],
    [['--log_output_level', 'nope:debug'], '--log_output_level: unknown scope "nope"'],
    [['--log_output_level', 'ads:verbose'], '--log_output_level: unknown level "verbose"'],
    [['--log_stacktrace_level', 'default:loud'], '--log_stacktrace_level: unknown level "loud"'],
    [['--log_caller', 'ads,bogus'], '--log_caller: unknown scope "bogus"'],
    [['--log_rotate_max_size', '0'], '--log_rotate_max_size: 0 is out of range'],
    [['--unknown'], "unknown option '--unknown'"],
  ])('%j is a ConfigError naming the flag', (argv, message) => {
    expect(errorOf(() => parseDiscoveryArgs(argv)).message).toContain(message);
  });

  it('refuses DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH=true by name (the legacy mode is not built); false and unset start', () => {
    const error = errorOf(() => parseDiscoveryArgs([], { DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH: 'true' }));
    expect(error.issues).toEqual([expect.stringMatching(/^DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH: true is not supported: AUTO_PASSTHROUGH gateways route only to mesh services/)]);
    expect(parseDiscoveryArgs([], { DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH: 'false' }).env.DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH).toBe(false);
    expect(parseDiscoveryArgs([], {}).env.DISC_ENABLE_LEGACY_AUTO_PASSTHROUGH).toBe(false);
  });

  it('reports every bad flag and variable together', () => {
    const error = errorOf(() =>
      parseDiscoveryArgs(['--keepaliveInterval', 'x', '--registries', 'Foo'], { DISC_DEBOUNCE_AFTER: 'abc' }),
    );
    expect(error.issues).toEqual([
      'DISC_DEBOUNCE_AFTER: invalid duration "abc"',
      '--keepaliveInterval: invalid duration "x"',
      '--registries: invalid value "Foo" (choose from Cluster, Mock)',
    ]);
  });

  it('validates options objects as commander produces them', () => {
    const env = parseDaemonEnv({});
    expect(discoveryOptionsFrom({ resync: '5m', registries: ['Mock'] }, env)).toMatchObject({ resync: 300_000, registries: ['Mock'] });
    expect(() => discoveryOptionsFrom({ resync: 5 }, env)).toThrow(ConfigError);
  });
});
