/**
 * `meshctl dashboard controlz|proxy`: a local port forwarded through the API server to a meshd
 * pod's ControlZ port or a proxy's admin port, its URL announced, and the system's browser opened
 * on it (`xdg-open`, `open` on macOS, `start` on Windows) unless `--browser=false`. Runs until
 * interrupted (SIGINT, SIGTERM), then closes the listener.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import type { KubeClient } from '../../../kube/client.js';
import { CliError, type CommandOutcome } from '../../runner.js';
import { forwardPort } from './port-forward.js';

/** The DG flags of the spec: `--address` (an IP address or localhost), `--port`/`-p`, `--browser`. */
export interface DashboardFlags {
  readonly address: string;
  readonly port: number;
  readonly browser: boolean;
}

/** The DG flags checked; a CliError naming the flag otherwise. */
export function dashboardFlags(address: string, port: string, browser: boolean): DashboardFlags {
  if (address !== 'localhost' && net.isIP(address) === 0) throw new CliError(`--address: ${JSON.stringify(address)} is not an IP address or localhost`);
  const n = Number(port);
  if (!/^\d+$/.test(port) || n > 65535) throw new CliError(`--port: ${JSON.stringify(port)} is not a port number (0 picks a free one)`);
  return { address, port: n, browser };
}

/** The URL of `path` on the forwarded port. */
export function dashboardUrl(address: string, port: number, path: string): string {
  const host = net.isIPv6(address) ? `[${address}]` : address;
  return `http://${host}:${port}${path}`;
}

/** Opens `url` with the system's opener; resolves to why it could not, or undefined. */
export function openBrowser(url: string, platform = process.platform): Promise<string | undefined> {
  const [cmd, args] = platform === 'darwin' ? ['open', [url]] : platform === 'win32' ? ['cmd', ['/c', 'start', '', url]] : ['xdg-open', [url]];
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
    child.once('error', (err) => resolve(`${cmd}: ${err.message}`));
    child.once('spawn', () => {
      child.unref();
      resolve(undefined);
    });
  });
}

export interface DashboardTarget {
  readonly pod: { readonly namespace: string; readonly name: string };
  readonly podPort: number;
  /** What the dashboard is, for the messages: `ControlZ of meshd-…`. */
  readonly what: string;
  readonly path: string;
}

/**
 * Forwards, announces the URL on `io.out`, opens the browser, then waits for `until` (the
 * command's interruption) and closes the listener.
 */
export async function runDashboard(
  kube: KubeClient,
  target: DashboardTarget,
  flags: DashboardFlags,
  io: { readonly out: (text: string) => void; readonly err: (text: string) => void },
  until: Promise<unknown>,
): Promise<CommandOutcome> {
  const forward = await forwardPort(kube, target.pod, target.podPort, flags.address, flags.port);
  try {
    const url = dashboardUrl(flags.address, forward.port, target.path);
    io.out(`${target.what}: ${url} (forwarding to port ${target.podPort} of pod ${target.pod.namespace}/${target.pod.name} on ${forward.addresses.join(', ')}; Ctrl-C ends)\n`);
    if (flags.browser) {
      const failure = await openBrowser(url);
      if (failure) io.err(`cannot open a browser (${failure}); open ${url} yourself\n`);
    }
    await until;
    return {};
  } finally {
    await forward.close();
  }
}
