/**
 * A test host in a network namespace of its own: an IPv4 address on the namespace's `eth0`, a veth
 * link to this machine, a route from this machine to that address (/32) over the link, and the
 * namespace's default route back through the machine's end (`gateway`). Processes started inside
 * see only that interface and loopback; clients on this machine reach the address across the link,
 * as they would a pod on a node. Nothing else of the machine's network changes, and `destroy()`
 * removes all of it.
 *
 *   const host = await createTestHost({ name: ownedName('mesh-pod3-', 'web'), address: '198.19.204.7' });
 *   const server = host.spawn([process.execPath, 'server.mjs']);      // runs inside the namespace
 *   const { stdout } = await host.exec(['ip', '-4', 'route']);          // a command inside, awaited
 *   await host.destroy();
 *
 * Names: a namespace made by a test process is called `<prefix><pid>-<tag>` (`ownedName`), so a
 * later run recognises a crashed one's leftovers by their dead owner (`removeLeftovers`). The
 * local control plane gives each plane its own prefix and pod range (scripts/cluster/pod-network.sh).
 *
 * Needs Linux, iproute2 and root (CAP_NET_ADMIN, and CAP_SYS_ADMIN for `ip netns`); `netnsSupport()`
 * says whether this process has them and, if not, why.
 */
import { execFile, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';

/** Host-side address of a test host's link unless one is given: link-local, never routed beyond the link. */
export const DEFAULT_GATEWAY = '169.254.1.1';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/;

export interface NetnsSupport {
  readonly ok: boolean;
  /** Why test hosts cannot be made here (when not ok). */
  readonly reason?: string;
}

export interface ExecResult {
  /** Exit code; null when killed by a signal or timed out. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface TestHostOptions {
  /** Namespace name (letters, digits, `.`, `_`, `-`); see `ownedName`. */
  readonly name: string;
  /** The host's IPv4 address, on `eth0` inside the namespace. */
  readonly address: string;
  /** This machine's address on the link, the namespace's default gateway (default DEFAULT_GATEWAY). */
  readonly gateway?: string;
}

export interface TestHost {
  readonly name: string;
  readonly address: string;
  readonly gateway: string;
  /** This machine's end of the link. */
  readonly hostInterface: string;
  /** Runs a command inside the namespace and waits for it (default timeout 30 s). Never rejects on an exit code. */
  exec(argv: ReadonlyArray<string>, opts?: { readonly timeoutMs?: number; readonly input?: string }): Promise<ExecResult>;
  /** Starts a long-running process inside the namespace; `destroy()` ends it if it still runs. */
  spawn(argv: ReadonlyArray<string>, opts?: SpawnOptions): ChildProcess;
  /** Ends the processes inside, removes the link, the route and the namespace. Idempotent. */
  destroy(): Promise<void>;
}

/** A failed `ip` step, with what it said. */
export class NetnsError extends Error {
  constructor(
    message: string,
    readonly stderr = '',
  ) {
    super(stderr ? `${message}: ${stderr.trim()}` : message);
    this.name = 'NetnsError';
  }
}

function ip(args: ReadonlyArray<string>, input?: string, timeoutMs = 15_000): Promise<ExecResult> {
  return new Promise((resolve) => {
    const child = execFile('ip', [...args], { timeout: timeoutMs, maxBuffer: 4 << 20, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : null) : 0;
      resolve({ code, stdout, stderr: stderr || (err && code === null ? err.message : '') });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

async function ipOrThrow(what: string, args: ReadonlyArray<string>, input?: string): Promise<string> {
  const r = await ip(args, input);
  if (r.code !== 0) throw new NetnsError(what, r.stderr || `ip ${args.join(' ')} exited with ${String(r.code)}`);
  return r.stdout;
}

let support: NetnsSupport | undefined;

/**
 * Whether this process can make test hosts: checked once by making (and removing) a namespace with
 * a link, the way `createTestHost` does.
 */
export function netnsSupport(): NetnsSupport {
  if (support) return support;
  if (process.platform !== 'linux') return (support = { ok: false, reason: `network namespaces need Linux (this is ${process.platform})` });
  const version = spawnSync('ip', ['-V'], { encoding: 'utf8' });
  if (version.error) return (support = { ok: false, reason: 'the ip command (iproute2) is not installed' });
  const probe = `mesh-probe-${process.pid}`;
  const link = `mp${process.pid.toString(16).slice(-12)}`;
  const add = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (add.status !== 0) {
    return (support = { ok: false, reason: `cannot create a network namespace (needs root: CAP_SYS_ADMIN and CAP_NET_ADMIN): ${add.stderr.trim()}` });
  }
  const veth = spawnSync('ip', ['link', 'add', link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', probe], { encoding: 'utf8' });
  spawnSync('ip', ['link', 'del', link]);
  spawnSync('ip', ['netns', 'del', probe]);
  if (veth.status !== 0) return (support = { ok: false, reason: `cannot create a veth link (needs CAP_NET_ADMIN): ${veth.stderr.trim()}` });
  return (support = { ok: true });
}

/** `<prefix><this process's pid>-<tag>`: a namespace name whose owner a later run can check. */
export function ownedName(prefix: string, tag: string): string {
  return `${prefix}${process.pid}-${tag}`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Names of the namespaces on this machine that start with `prefix`. */
export async function listNamespaces(prefix = ''): Promise<string[]> {
  const out = await ipOrThrow('cannot list network namespaces', ['netns', 'list']);
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name !== '' && name.startsWith(prefix))
    .sort();
}

async function removeNamespace(name: string, hostInterface?: string): Promise<void> {
  const pids = await ip(['netns', 'pids', name]);
  for (const pid of pids.stdout.split(/\s+/).filter((p) => /^\d+$/.test(p))) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already
    }
  }
  // Deleting either end of the link removes both ends and this machine's route to the host, even
  // while some process still holds the namespace open.
  if (hostInterface) await ip(['link', 'del', hostInterface]);
  await ip(['-n', name, 'link', 'del', 'eth0']);
  const del = await ip(['netns', 'del', name]);
  if (del.code !== 0 && !/No such file|not found/i.test(del.stderr)) throw new NetnsError(`cannot remove network namespace ${name}`, del.stderr);
}

/**
 * Removes the namespaces named `<prefix><pid>-…` whose owner process has ended (a crashed run's
 * leftovers), or all of the prefix's with `all`. Returns the names removed.
 */
export async function removeLeftovers(prefix: string, which: 'dead' | 'all' = 'dead'): Promise<string[]> {
  if (!prefix) throw new Error('removeLeftovers: a prefix is required');
  const removed: string[] = [];
  for (const name of await listNamespaces(prefix)) {
    const owner = /^(\d+)-/.exec(name.slice(prefix.length))?.[1];
    if (which === 'dead' && owner !== undefined && alive(Number(owner))) continue;
    await removeNamespace(name);
    removed.push(name);
  }
  return removed;
}

/** The name of this machine's end of a host's link (at most 15 characters, as Linux requires). */
export function hostInterfaceOf(name: string): string {
  return `mh${createHash('sha256').update(name).digest('hex').slice(0, 12)}`;
}

/** Makes a test host; see the module comment. Rejects, leaving nothing behind, when a step fails. */
export async function createTestHost(opts: TestHostOptions): Promise<TestHost> {
  const { name, address } = opts;
  const gateway = opts.gateway ?? DEFAULT_GATEWAY;
  if (!NAME.test(name)) throw new Error(`createTestHost: name "${name}" must be 1-200 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  if (!isIPv4(address)) throw new Error(`createTestHost: address "${address}" is not an IPv4 address`);
  if (!isIPv4(gateway)) throw new Error(`createTestHost: gateway "${gateway}" is not an IPv4 address`);
  if (gateway === address) throw new Error(`createTestHost: gateway and address are both ${address}`);
  const hostInterface = hostInterfaceOf(name);

  const existing = await ip(['route', 'show', 'exact', `${address}/32`]);
  if (existing.stdout.trim()) {
    throw new NetnsError(`createTestHost: ${address} is already routed on this machine (${existing.stdout.trim()}); another test host has it`);
  }
  await ipOrThrow(`cannot create network namespace ${name}`, ['netns', 'add', name]);
  try {
    await ipOrThrow(
      `cannot link ${name} to this machine`,
      ['-batch', '-'],
      [
        `link add ${hostInterface} type veth peer name eth0 netns ${name}`,
        `addr add ${gateway}/32 dev ${hostInterface}`,
        `link set ${hostInterface} up`,
      ].join('\n'),
    );
    await ipOrThrow(
      `cannot set up the network inside ${name}`,
      ['-n', name, '-batch', '-'],
      [
        'link set lo up',
        `addr add ${address}/32 dev eth0`,
        'link set eth0 up',
        `route add ${gateway}/32 dev eth0 scope link`,
        `route add default via ${gateway} dev eth0`,
      ].join('\n'),
    );
    const route = await ip(['route', 'add', `${address}/32`, 'dev', hostInterface, 'src', gateway]);
    if (route.code !== 0) {
      throw new NetnsError(
        /File exists/.test(route.stderr) ? `${address} was routed elsewhere meanwhile; another test host has it` : `cannot route ${address} to ${name}`,
        route.stderr,
      );
    }
  } catch (err) {
    await removeNamespace(name, hostInterface).catch(() => undefined);
    throw err;
  }

  const children = new Set<ChildProcess>();
  let destroyed: Promise<void> | undefined;
  return {
    name,
    address,
    gateway,
    hostInterface,
    exec: (argv, o = {}) => ip(['netns', 'exec', name, ...argv], o.input, o.timeoutMs ?? 30_000),
    spawn: (argv, o = {}) => {
      if (destroyed) throw new Error(`test host ${name} is destroyed`);
      const child = spawn('ip', ['netns', 'exec', name, ...argv], o);
      children.add(child);
      child.once('exit', () => children.delete(child));
      return child;
    },
    destroy: () => {
      destroyed ??= (async () => {
        await Promise.all([...children].map((c) => stopChild(c)));
        await removeNamespace(name, hostInterface);
      })();
      return destroyed;
    },
  };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
export function stopChild(child: ChildProcess, graceMs = 2000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
