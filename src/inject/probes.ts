/**
 * Application probes rewritten through the agent. With capture on, the kubelet's HTTP probes would
 * reach the proxy's inbound listener and fail under mutual TLS; so each HTTP or TCP probe of an
 * application container is replaced by an HTTP probe of the agent (`/app-health/<container>/readyz`,
 * `livez` or `startupz` on its status port), and the original goes to the agent in the proxy's
 * MESH_KUBE_APP_PROBERS variable, keyed by that path. The agent then probes the application itself
 * (from the proxy's uid, which capture lets through), on the pod IP or, with
 * REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION, on localhost. Named ports are resolved here, since the
 * agent cannot see the container's port names.
 */
import { APP_HEALTH_PREFIX } from '../agent/names.js';
import { InjectionError } from './errors.js';
import type { Container, Probe } from './pod.js';

/** What the agent needs to run one original probe. */
export interface AppProber {
  readonly httpGet?: { readonly path?: string; readonly port: number; readonly scheme?: string; readonly host?: string; readonly httpHeaders?: ReadonlyArray<{ readonly name: string; readonly value: string }> };
  readonly tcpSocket?: { readonly port: number; readonly host?: string };
  readonly timeoutSeconds?: number;
}

export type AppProbers = Record<string, AppProber>;

const KINDS = [
  ['readinessProbe', 'readyz'],
  ['livenessProbe', 'livez'],
  ['startupProbe', 'startupz'],
] as const;

function portOf(c: Container, port: number | string | undefined, where: string): number {
  if (typeof port === 'number') return port;
  if (typeof port === 'string' && /^\d+$/.test(port)) return Number(port);
  const named = (c.ports ?? []).find((p) => p.name === port);
  if (!named) throw new InjectionError(where, `port ${JSON.stringify(port)} is not a port of container ${c.name} (name a containerPort or give a number)`);
  return named.containerPort;
}

/** The agent path that replaces probe `kind` of container `name`. */
export function appHealthPath(container: string, suffix: string): string {
  return `${APP_HEALTH_PREFIX}${container}/${suffix}`;
}

/**
 * Rewrites the HTTP and TCP probes of `containers` (copies; the inputs stay as they are) to the
 * agent on `statusPort`. Returns the new containers and the original probers by path.
 */
export function rewriteProbes(containers: ReadonlyArray<Container>, statusPort: number, base: string): { containers: Container[]; probers: AppProbers } {
  const probers: AppProbers = {};
  const out = containers.map((c, i) => {
    const copy: Container = { ...c };
    for (const [kind, suffix] of KINDS) {
      const probe = c[kind] as Probe | undefined;
      if (!probe) continue;
      const where = `${base}[${i}].${kind}`;
      let prober: AppProber | undefined;
      if (probe.httpGet) {
        const h = probe.httpGet;
        const port = portOf(c, h.port as number | string, `${where}.httpGet.port`);
        prober = {
          httpGet: {
            ...(h.path !== undefined ? { path: h.path } : {}),
            port,
            ...(h.scheme !== undefined ? { scheme: h.scheme } : {}),
            ...(h.host !== undefined ? { host: h.host } : {}),
            ...(h.httpHeaders && h.httpHeaders.length > 0 ? { httpHeaders: h.httpHeaders.map((x) => ({ name: x.name, value: x.value })) } : {}),
          },
        };
      } else if (probe.tcpSocket) {
        const port = portOf(c, probe.tcpSocket.port as number | string, `${where}.tcpSocket.port`);
        prober = { tcpSocket: { port, ...(probe.tcpSocket.host !== undefined ? { host: probe.tcpSocket.host } : {}) } };
      }
      if (!prober) continue; // exec and gRPC probes run inside the container or are not captured
      const path = appHealthPath(c.name, suffix);
      probers[path] = probe.timeoutSeconds !== undefined ? { ...prober, timeoutSeconds: probe.timeoutSeconds } : prober;
      const rest: Probe = { ...probe };
      delete rest.httpGet;
      delete rest.tcpSocket;
      copy[kind] = { ...rest, httpGet: { path, port: statusPort as unknown as never, scheme: 'HTTP' } } as Probe;
    }
    return copy;
  });
  return { containers: out, probers };
}

/**
 * The reverse of `rewriteProbes` for one container: probes that point at the agent are replaced by
 * the originals of `probers`.
 */
export function restoreProbes(c: Container, probers: Readonly<AppProbers>): Container {
  const copy: Container = { ...c };
  for (const [kind, suffix] of KINDS) {
    const probe = c[kind] as Probe | undefined;
    const original = probers[appHealthPath(c.name, suffix)];
    if (!probe || !original || probe.httpGet?.path !== appHealthPath(c.name, suffix)) continue;
    const rest: Probe = { ...probe };
    delete rest.httpGet;
    const restored: Probe = { ...rest };
    if (original.httpGet) restored.httpGet = { ...original.httpGet, port: original.httpGet.port as unknown as never } as Probe['httpGet'];
    if (original.tcpSocket) restored.tcpSocket = { ...original.tcpSocket, port: original.tcpSocket.port as unknown as never } as Probe['tcpSocket'];
    copy[kind] = restored;
  }
  return copy;
}
