/**
 * One run of the sidecar agent (`mesh-agent proxy sidecar|router`): the workload certificate
 * first (nothing else starts without it), then the SDS socket, the Envoy bootstrap, the health
 * and status servers, and Envoy itself; on `stop` (SIGTERM) Envoy's listeners are drained for the
 * termination drain duration and everything closes. Resolves to the exit code: 0 after a stop, or
 * Envoy's code when it exited on its own (the container restarts then).
 *
 * In gRPC mode (`--mode grpc`, ./grpc-agent.ts) no SDS socket and no Envoy: the same certificate
 * is written as files (again on each renewal), then the gRPC xDS bootstrap; readiness holds while
 * the certificate does, and `stop` waits the drain duration for the application to finish.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { durationMs } from '../util/config-duration.js';
import { releaseStartupMemoryLater } from '../util/start-up-memory.js';
import { envoyBootstrap } from './bootstrap.js';
import { CertificateManager, type CertificateManagerOptions } from './certificates.js';
import { GRPC_BOOTSTRAP_FILE, grpcAgentBootstrap, grpcCertPaths, writeGrpcCertFiles } from './grpc-agent.js';
import { EnvoyProcess } from './envoy.js';
import { workloadCredentials } from './ca-client.js';
import { startDnsCapture } from './dns/capture.js';
import { agentMetrics } from './metrics.js';
import { ENVOY_BOOTSTRAP_PATH, PROXY_CONFIG_DIR, PROXY_PORTS } from './names.js';
import { SdsServer } from './sds.js';
import { nodeId, type AgentSettings } from './settings.js';
import { StatusServers } from './status.js';

export interface AgentRunOptions {
  readonly settings: AgentSettings;
  readonly log: Logger;
  /** Aborted on SIGTERM/SIGINT. */
  readonly stop: AbortSignal;
  /** Address the health and status servers listen on (all interfaces in a pod). */
  readonly listenHost?: string;
  /** The resolver configuration DNS capture forwards to (default /etc/resolv.conf). */
  readonly resolvConfPath?: string;
}

export async function writeFileAtomic(path: string, content: string, mode = 0o644): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode });
  await rename(tmp, path);
}

/** Where the bootstrap goes: ENVOY_BOOTSTRAP_PATH's name inside the configured directory. */
export function bootstrapPath(s: AgentSettings): string {
  return join(s.paths.configDir, ENVOY_BOOTSTRAP_PATH.slice(PROXY_CONFIG_DIR.length + 1));
}

/** How the agent reaches the certificate service: CA_ADDR, checked for its own TLS name. */
export function caClientOptions(s: AgentSettings): CertificateManagerOptions['ca'] {
  return { address: s.caAddress, serverName: s.caServerName, timeoutMs: 10_000 };
}

function certificateManager(s: AgentSettings, log: Logger, metrics: ReturnType<typeof agentMetrics>): CertificateManager {
  const jitter = Math.min(0.1, s.secretGraceRatio / 2, (1 - s.secretGraceRatio) / 2);
  const certs = new CertificateManager({
    ca: caClientOptions(s),
    identity: s.identity,
    readToken: () => readFile(s.paths.token, 'utf8'),
    readRoots: () => readFile(s.paths.rootCert, 'utf8'),
    ttlSeconds: s.secretTtlSeconds,
    graceRatio: s.secretGraceRatio,
    jitterRatio: jitter,
    retry: { attempts: 6, initialDelayMs: 500, maxDelayMs: 16_000 },
    rootPollMs: 10_000,
    log,
    onRenewal: (result, credential) => metrics.certificateRequests.inc({ result, credential }),
  });
  certs.onChange((c) => metrics.certificateExpiry.set(c.notAfter.getTime() / 1000));
  return certs;
}

const stopped = (signal: AbortSignal): Promise<'stop'> => new Promise((r) => (signal.aborted ? r('stop') : signal.addEventListener('abort', () => r('stop'), { once: true })));

export async function runProxyAgent(o: AgentRunOptions): Promise<number> {
  if (o.settings.mode === 'grpc') return runGrpcAgent(o);
  const { settings: s, log } = o;
  let sds: SdsServer | undefined;
  const metrics = agentMetrics(() => sds?.streamCount ?? 0);
  const certs = certificateManager(s, log, metrics);
  const closers: Array<() => Promise<void> | void> = [() => certs.stop()];
  const closeAll = async (): Promise<void> => {
    for (const c of closers.reverse()) await Promise.resolve(c()).catch((err: unknown) => log.warn(`closing: ${(err as Error).message}`));
  };
  try {
    await certs.start();
    if (o.stop.aborted) return 0;
    const socket = resolve(s.paths.sdsSocket);
    sds = new SdsServer({ socketPath: socket, log, current: () => certs.current(), onChange: (l) => certs.onChange(l) });
    await sds.start();
    const server = sds;
    closers.push(() => server.stop());
    // the same node and credential as Envoy's ADS stream (docs/adr/0187)
    const dns = !s.dnsCapture
      ? undefined
      : await startDnsCapture({
        discoveryAddress: s.discoveryAddress,
        serverName: s.xdsServerName,
        credentials: () => {
          const c = certs.current();
          if (!c) throw new Error('no workload certificate');
          return workloadCredentials(c.rootPem, c.keyPem, c.certChainPem);
        },
        node: { id: nodeId(s), metadata: s.metadata },
        host: '127.0.0.1',
        port: PROXY_PORTS.dns,
        resolvConfPath: o.resolvConfPath ?? '/etc/resolv.conf',
        log,
        metrics,
      });
    if (dns) closers.push(() => dns.stop());
    await mkdir(s.paths.configDir, { recursive: true });
    const bootstrap = bootstrapPath(s);
    await writeFileAtomic(bootstrap, `${JSON.stringify(envoyBootstrap(s, socket), null, 2)}\n`);
    log.info({ path: bootstrap }, 'Envoy bootstrap written');

    const envoy = new EnvoyProcess({
      binary: s.paths.envoyBinary,
      bootstrapPath: bootstrap,
      adminPort: s.ports.admin,
      concurrency: s.concurrency,
      logLevel: s.proxyLogLevel,
      componentLogLevel: s.proxyComponentLogLevel,
      drainTimeSeconds: Math.max(1, Math.round(durationMs(s.proxyConfig.drainDuration ?? '45s') / 1000)),
      log,
    });
    const status = new StatusServers({
      host: o.listenHost ?? '0.0.0.0',
      healthPort: s.ports.health,
      statusPort: s.ports.status,
      registry: metrics.registry,
      envoyAdminPort: s.ports.admin,
      appMetrics: s.appMetrics ? { host: s.probeLocalhost ? '127.0.0.1' : (s.instanceIps[0] as string), ...s.appMetrics } : undefined,
      appProbers: s.appProbers,
      probeHost: s.probeLocalhost ? '127.0.0.1' : (s.instanceIps[0] as string),
      onScrapeFailure: (source) => metrics.scrapeFailures.inc({ source }),
      log,
      readiness: async () => {
        const c = certs.current();
        if (!c || c.notAfter.getTime() <= Date.now()) return { ready: false, reason: 'no valid workload certificate' };
        // with DNS captured, mesh names resolve only once the first name table arrived
        if (dns && dns.client.received === 0) return { ready: false, reason: 'no name table from meshd yet (DNS capture)' };
        return envoy.ready();
      },
    });
    await status.start();
    closers.push(() => status.stop());

    let exitedOnItsOwn: ((code: number) => void) | undefined;
    const envoyExit = new Promise<number>((r) => (exitedOnItsOwn = r));
    await envoy.start((code) => exitedOnItsOwn?.(code));
    closers.push(releaseStartupMemoryLater(log));
    const why = await Promise.race([stopped(o.stop), envoyExit]);
    if (why === 'stop') {
      log.info({ drainMs: s.drainDurationMs }, 'stopping: draining Envoy');
      const code = await envoy.drainAndStop(s.drainDurationMs);
      log.info({ code }, 'Envoy stopped');
      return 0;
    }
    return why === 0 ? 1 : why;
  } finally {
    await closeAll();
  }
}

/** Where the gRPC bootstrap goes: GRPC_BOOTSTRAP_PATH's name inside the configured directory. */
export function grpcBootstrapPath(s: AgentSettings): string {
  return join(s.paths.configDir, GRPC_BOOTSTRAP_FILE);
}

async function runGrpcAgent(o: AgentRunOptions): Promise<number> {
  const { settings: s, log } = o;
  const metrics = agentMetrics(() => 0);
  const certs = certificateManager(s, log, metrics);
  const files = grpcCertPaths(resolve(s.paths.certDir));
  let written = 0;
  // Renewals and root changes are written in order, one after the other.
  let writing: Promise<void> = Promise.resolve();
  const write = (c: NonNullable<ReturnType<CertificateManager['current']>>): Promise<void> =>
    (writing = writing
      .then(() => writeGrpcCertFiles(files, c, writeFileAtomic))
      .then(
        () => {
          written = c.version;
          log.info({ dir: s.paths.certDir, version: c.version, notAfter: c.notAfter.toISOString() }, 'certificate files written');
        },
        (err: unknown) => log.error(`writing the certificate files failed: ${(err as Error).message}`),
      ));
  let status: StatusServers | undefined;
  try {
    await certs.start();
    if (o.stop.aborted) return 0;
    await mkdir(s.paths.certDir, { recursive: true });
    await mkdir(s.paths.configDir, { recursive: true });
    const first = certs.current();
    if (!first) throw new Error('no workload certificate');
    await writeGrpcCertFiles(files, first, writeFileAtomic);
    written = first.version;
    certs.onChange((c) => void write(c));
    const bootstrap = grpcBootstrapPath(s);
    await writeFileAtomic(bootstrap, `${JSON.stringify(grpcAgentBootstrap(s, files), null, 2)}\n`);
    log.info({ path: bootstrap, certDir: s.paths.certDir }, 'gRPC xDS bootstrap and certificate files written');
    status = new StatusServers({
      host: o.listenHost ?? '0.0.0.0',
      healthPort: s.ports.health,
      statusPort: s.ports.status,
      registry: metrics.registry,
      appMetrics: s.appMetrics ? { host: s.probeLocalhost ? '127.0.0.1' : (s.instanceIps[0] as string), ...s.appMetrics } : undefined,
      appProbers: s.appProbers,
      probeHost: s.probeLocalhost ? '127.0.0.1' : (s.instanceIps[0] as string),
      onScrapeFailure: (source) => metrics.scrapeFailures.inc({ source }),
      log,
      readiness: () => {
        const c = certs.current();
        if (!c || c.notAfter.getTime() <= Date.now()) return Promise.resolve({ ready: false, reason: 'no valid workload certificate' });
        if (written === 0) return Promise.resolve({ ready: false, reason: 'certificate files not written' });
        return Promise.resolve({ ready: true, reason: 'certificate files and gRPC bootstrap written' });
      },
    });
    await status.start();
    const cancelRelease = releaseStartupMemoryLater(log);
    await stopped(o.stop);
    cancelRelease();
    // The application keeps its connections; the drain gives it time to finish while the files stay.
    log.info({ drainMs: s.drainDurationMs }, 'stopping: draining');
    await new Promise((r) => setTimeout(r, s.drainDurationMs));
    return 0;
  } finally {
    certs.stop();
    await writing;
    await status?.stop();
  }
}
