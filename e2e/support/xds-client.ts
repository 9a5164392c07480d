/**
 * Typed handle on one proxyless gRPC client process (xds-client-child.mjs). The process bootstraps
 * grpc-js-xds against the daemon under test and makes Echo calls on command; see that file for the
 * line protocol.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Node } from '../../src/gen/envoy/config/core/v3/base.js';
import type { EchoReply } from './backend.js';
import { eventually, tail } from '../../test/support/eventually.js';

export const DEFAULT_NODE_ID = 'sidecar~127.0.0.1~client-1.default~default.svc.cluster.local';

export const DEFAULT_NODE_METADATA: Readonly<Record<string, unknown>> = {
  GENERATOR: 'grpc',
  NAMESPACE: 'default',
  CLUSTER_ID: 'Cluster',
};

/** The node of a proxyless gRPC client, as grpc-js-xds sends it (for raw ADS streams that stand for one). */
export function xdsClientNode(id = DEFAULT_NODE_ID, metadata: Record<string, unknown> = {}): Node {
  return {
    id,
    cluster: '',
    metadata: { ...DEFAULT_NODE_METADATA, ...metadata },
    dynamicParameters: {},
    locality: { region: '', zone: '', subZone: '' },
    userAgentName: 'mesh-e2e-raw-ads',
    userAgentVersion: '0.0.0',
    extensions: [],
    clientFeatures: [],
    listeningAddresses: [],
  };
}

/**
 * grpc-js-xds feature switches, set explicitly so that a change of the package's defaults cannot
 * silently turn a scenario off. Read from node_modules/@grpc/grpc-js-xds/build/src/environment.js
 * (1.14.1): fault injection and retry default on, RBAC defaults off.
 */
export const XDS_FEATURE_ENV: Readonly<Record<string, string>> = {
  GRPC_XDS_EXPERIMENTAL_FAULT_INJECTION: 'true',
  GRPC_XDS_EXPERIMENTAL_ENABLE_RETRY: 'true',
  GRPC_XDS_EXPERIMENTAL_RBAC: 'true',
  GRPC_EXPERIMENTAL_ENABLE_OUTLIER_DETECTION: 'true',
  GRPC_XDS_EXPERIMENTAL_ENABLE_RING_HASH: 'true',
};

export interface XdsClientOptions {
  /** `host:port` of the daemon's plaintext xDS listener. */
  readonly xdsAddr: string;
  readonly nodeId?: string;
  /** Node metadata; merged over DEFAULT_NODE_METADATA. */
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly locality?: { readonly region?: string; readonly zone?: string; readonly subZone?: string };
  /** Extra environment, e.g. `{ GRPC_TRACE: 'xds_client,xds_resolver', GRPC_VERBOSITY: 'DEBUG' }`. */
  readonly env?: Readonly<Record<string, string>>;
  /** Time to wait for the process to answer its first ping (default 10 s). */
  readonly startTimeoutMs?: number;
}

export interface CallOptions {
  /** Number of calls (default 1). */
  readonly count?: number;
  readonly metadata?: Readonly<Record<string, string>>;
  /** Per-call deadline (default 2000 ms). */
  readonly deadlineMs?: number;
  /** Calls in flight at once (default 1: sequential). */
  readonly concurrency?: number;
  readonly message?: string;
}

export interface CallResult {
  /** Successful calls per answering backend. */
  readonly results: Record<string, number>;
  /** Failed calls per `STATUS: details`. */
  readonly errors: Record<string, number>;
  /** Failed calls per status name (`UNAVAILABLE`, …). */
  readonly codes: Record<string, number>;
  readonly ok: number;
  readonly failed: number;
  readonly lastReply?: EchoReply;
}

export interface XdsClient {
  readonly pid: number;
  readonly nodeId: string;
  /** Makes `opts.count` Echo calls to `xds:///target` and tallies where they went. */
  call(target: string, opts?: CallOptions): Promise<CallResult>;
  /** Connectivity state name of the channel to `target` (creating the channel if needed). */
  state(target: string): Promise<string>;
  /**
   * Polls `predicate` until it holds. The error on timeout carries the last call result seen by
   * this client and the tail of its stderr.
   */
  waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs?: number, what?: string): Promise<void>;
  /** Repeats `call(target, opts)` until `accept` holds for a result, and returns that result. */
  callUntil(target: string, opts: CallOptions, accept: (r: CallResult) => boolean, timeoutMs?: number, what?: string): Promise<CallResult>;
  /** The result of the most recent `call`. */
  lastResult(): CallResult | undefined;
  /** Everything the process wrote to stderr (bounded). */
  stderr(): string;
  close(): Promise<void>;
}

const SCRIPT = fileURLToPath(new URL('./xds-client-child.mjs', import.meta.url));
const MAX_STDERR = 1 << 20;

/** The bootstrap JSON handed to grpc-js-xds through GRPC_XDS_BOOTSTRAP_CONFIG. */
export function buildBootstrap(opts: XdsClientOptions): Record<string, unknown> {
  return {
    xds_servers: [{ server_uri: opts.xdsAddr, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: {
      id: opts.nodeId ?? DEFAULT_NODE_ID,
      metadata: { ...DEFAULT_NODE_METADATA, ...(opts.metadata ?? {}) },
      // grpc-js-xds refuses a node without a locality.
      locality: { region: opts.locality?.region ?? '', zone: opts.locality?.zone ?? '', sub_zone: opts.locality?.subZone ?? '' },
    },
  };
}

interface Pending {
  resolve: (value: Record<string, unknown>) => void;
  reject: (err: Error) => void;
}

export async function startXdsClient(opts: XdsClientOptions): Promise<XdsClient> {
  const nodeId = opts.nodeId ?? DEFAULT_NODE_ID;
  const child: ChildProcess = spawn(process.execPath, [SCRIPT], {
    env: { ...process.env, ...XDS_FEATURE_ENV, ...(opts.env ?? {}), GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(buildBootstrap(opts)) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
    if (stderr.length > MAX_STDERR) stderr = stderr.slice(stderr.length - MAX_STDERR / 2);
  });

  const pending = new Map<number, Pending>();
  let nextId = 1;
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      const err = new Error(`xds client process exited (code ${code}, signal ${signal}); stderr:\n${tail(stderr)}`);
      for (const p of pending.values()) p.reject(err);
      pending.clear();
      resolve();
    });
  });
  child.on('error', (err) => {
    stderr += `\n[spawn error] ${err.message}\n`;
  });
  // Writes to a process that already exited must not crash the test run.
  child.stdin?.on('error', () => undefined);

  const rl = createInterface({ input: child.stdout!, crlfDelay: Infinity });
  rl.on('line', (line) => {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line) as Record<string, unknown>;
    } catch {
      stderr += `\n[unparsable stdout line] ${line}\n`;
      return;
    }
    const id = typeof msg.id === 'number' ? msg.id : -1;
    const p = pending.get(id);
    if (!p) {
      stderr += `\n[unexpected answer] ${line}\n`;
      return;
    }
    pending.delete(id);
    if (typeof msg.error === 'string') p.reject(new Error(`xds client: ${msg.error}`));
    else p.resolve(msg);
  });

  const send = (cmd: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> => {
    if (exit) return Promise.reject(new Error(`xds client process already exited (code ${exit.code}); stderr:\n${tail(stderr)}`));
    const id = nextId++;
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`xds client: no answer to ${JSON.stringify(cmd)} within ${timeoutMs} ms; stderr:\n${tail(stderr)}`));
      }, timeoutMs);
      pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      child.stdin!.write(`${JSON.stringify({ ...cmd, id })}\n`);
    });
  };

  try {
    await send({ op: 'ping' }, opts.startTimeoutMs ?? 10_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }

  let last: CallResult | undefined;
  const call = async (target: string, o: CallOptions = {}): Promise<CallResult> => {
    const count = o.count ?? 1;
    const deadlineMs = o.deadlineMs ?? 2000;
    const concurrency = Math.max(1, o.concurrency ?? 1);
    // Bound the whole command by the worst case of its calls, plus slack.
    const budget = Math.ceil(count / concurrency) * (deadlineMs + 500) + 5000;
    const msg = await send({ op: 'call', target, count, deadlineMs, concurrency, metadata: o.metadata ?? {}, message: o.message }, budget);
    const result: CallResult = {
      results: (msg.results ?? {}) as Record<string, number>,
      errors: (msg.errors ?? {}) as Record<string, number>,
      codes: (msg.codes ?? {}) as Record<string, number>,
      ok: Number(msg.ok ?? 0),
      failed: Number(msg.failed ?? 0),
      ...(msg.lastReply ? { lastReply: msg.lastReply as EchoReply } : {}),
    };
    last = result;
    return result;
  };

  const diagnostics = (): string => `last call result: ${JSON.stringify(last)}\nxds client stderr:\n${tail(stderr)}`;

  let closing: Promise<void> | undefined;
  return {
    pid: child.pid ?? -1,
    nodeId,
    call,
    state: async (target) => String((await send({ op: 'state', target }, 5000)).state),
    waitFor: async (predicate, timeoutMs = 10_000, what) => {
      await eventually(what ?? 'client predicate', async () => (await predicate()) || undefined, { timeoutMs, intervalMs: 100, diagnostics, retryErrors: true });
    },
    callUntil: (target, o, accept, timeoutMs = 10_000, what) =>
      eventually(
        what ?? `calls to ${target} to match`,
        async () => {
          const r = await call(target, o);
          return accept(r) ? r : undefined;
        },
        { timeoutMs, intervalMs: 100, diagnostics, retryErrors: true },
      ),
    lastResult: () => last,
    stderr: () => stderr,
    close: () => {
      closing ??= (async () => {
        if (!exit) {
          child.stdin?.end();
          const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
          await exited;
          clearTimeout(killer);
        }
        rl.close();
      })();
      return closing;
    },
  };
}
