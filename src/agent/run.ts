/**
 * One run of the sidecar agent (`mesh-agent proxy sidecar|router`): the workload certificate
 * first (nothing else starts without it), then the SDS socket, the Envoy bootstrap, the health
 * and status servers, and Envoy itself; on `stop` (SIGTERM) Envoy's listeners are drained for the
 * termination drain duration and everything closes. Resolves to the exit code: 0 after a stop, or
 * Envoy's code when it exited on its own (the container restarts then).
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { durationMs } from '../util/config-duration.js';
import { envoyBootstrap } from './bootstrap.js';
import { CertificateManager } from './certificates.js';
import { EnvoyProcess } from './envoy.js';
import { agentMetrics } from './metrics.js';
import { ENVOY_BOOTSTRAP_PATH, PROXY_CONFIG_DIR } from './names.js';
import { SdsServer } from './sds.js';
import type { AgentSettings } from './settings.js';
import { StatusServers } from './status.js';

export interface AgentRunOptions {
  readonly settings: AgentSettings;
  readonly log: Logger;
  /** Aborted on SIGTERM/SIGINT. */
  readonly stop: AbortSignal;
  /** Address the health and status servers listen on (all interfaces in a pod). */
  readonly listenHost?: string;
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

export async function runProxyAgent(o: AgentRunOptions): Promise<number> {
  const { settings: s, log } = o;
  let sds: SdsServer | undefined;
  const metrics = agentMetrics(() => sds?.streamCount ?? 0);
  const jitter = Math.min(0.1, s.secretGraceRatio / 2, (1 - s.secretGraceRatio) / 2);
  const certs = new CertificateManager({
    ca: { address: s.caAddress, serverName: s.xdsServerName, timeoutMs: 10_000 },
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
        return envoy.ready();
      },
    });
    await status.start();
    closers.push(() => status.stop());

    let exitedOnItsOwn: ((code: number) => void) | undefined;
    const envoyExit = new Promise<number>((r) => (exitedOnItsOwn = r));
    await envoy.start((code) => exitedOnItsOwn?.(code));
    const stopped = new Promise<'stop'>((r) => (o.stop.aborted ? r('stop') : o.stop.addEventListener('abort', () => r('stop'), { once: true })));
    const why = await Promise.race([stopped, envoyExit]);
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
