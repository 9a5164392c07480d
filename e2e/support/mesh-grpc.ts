/**
 * Proxyless gRPC workloads built with grpc-go (tools/mesh-grpc): a server through grpc-go's xDS
 * server API and clients with xDS credentials, each a process of its own with an xDS bootstrap
 * whose certificate provider is a file watcher over the workload's certificate files.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';

/** The template grpc-go fills with a server's listening address (what meshd serves: docs/adr/0103). */
export const SERVER_LISTENER_TEMPLATE = 'grpc/server?xds.resource.listening_address=%s';

export interface WorkloadFiles {
  /** Directory with cert-chain.pem (leaf first), key.pem and root-cert.pem. */
  readonly dir: string;
}

export interface BootstrapInput {
  readonly xdsAddr: string;
  readonly nodeId: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly certs?: WorkloadFiles;
}

/** A gRPC xDS bootstrap: the node, meshd's plaintext xDS port, the server listener template and the file watcher. */
export function grpcBootstrap(b: BootstrapInput): string {
  return JSON.stringify({
    xds_servers: [{ server_uri: b.xdsAddr, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: { id: b.nodeId, metadata: { GENERATOR: 'grpc', NAMESPACE: b.namespace, LABELS: b.labels } },
    server_listener_resource_name_template: SERVER_LISTENER_TEMPLATE,
    ...(b.certs
      ? {
          certificate_providers: {
            default: {
              plugin_name: 'file_watcher',
              config: {
                certificate_file: join(b.certs.dir, 'cert-chain.pem'),
                private_key_file: join(b.certs.dir, 'key.pem'),
                ca_certificate_file: join(b.certs.dir, 'root-cert.pem'),
                refresh_interval: '1s',
              },
            },
          },
        }
      : {}),
  });
}

function collect(child: ChildProcessWithoutNullStreams, max = 64 << 10): () => string {
  let text = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    text = (text + c).slice(-max);
  });
  return () => text;
}

async function stopChild(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

export interface GrpcServer {
  readonly address: string;
  stderr(): string;
  stop(): Promise<void>;
}

/** Starts `mesh-grpc server` on `listen` (127.0.0.1:port); resolves once it listens (serving follows its xDS listener). */
export async function startGrpcServer(bin: string, listen: string, name: string, bootstrap: string): Promise<GrpcServer> {
  const child = spawn(bin, ['server', '-listen', listen, '-name', name], { env: { ...process.env, GRPC_XDS_BOOTSTRAP_CONFIG: bootstrap }, stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr = collect(child);
  await new Promise<void>((resolve, reject) => {
    const check = (): void => {
      if (stderr().includes('listening ')) resolve();
    };
    child.stderr.on('data', check);
    child.once('exit', (code) => reject(new Error(`mesh-grpc server exited with ${code}: ${stderr()}`)));
  });
  return { address: listen, stderr, stop: () => stopChild(child) };
}

export interface CallResult {
  readonly ok: boolean;
  /** gRPC status code name (Unavailable, PermissionDenied, …) when not ok. */
  readonly code?: string;
  readonly message?: string;
  readonly server?: string;
  /** The transport the server saw: `tls` or `insecure`. */
  readonly security?: string;
}

export interface GrpcClient {
  /** One call on the client's long-lived channel: `empty` (EmptyCall) or `unary` (UnaryCall). */
  call(method: 'empty' | 'unary'): Promise<CallResult>;
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * Starts `mesh-grpc client`: `creds: 'xds'` dials `xds:///target` with xDS credentials (the control
 * plane says whether to use mutual TLS); `creds: 'insecure'` dials `target` as plain host:port.
 */
export function startGrpcClient(bin: string, opts: { target: string; creds: 'xds' | 'insecure'; bootstrap?: string }): GrpcClient {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (opts.bootstrap) env.GRPC_XDS_BOOTSTRAP_CONFIG = opts.bootstrap;
  const target = opts.creds === 'xds' ? `xds:///${opts.target}` : opts.target;
  const child = spawn(bin, ['client', '-target', target, '-creds', opts.creds, '-timeout', '4s'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr = collect(child);
  const waiting: Array<(r: CallResult) => void> = [];
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.((JSON.parse(line) as CallResult)));
  child.once('exit', (code) => {
    for (const w of waiting.splice(0)) w({ ok: false, code: 'ClientExited', message: `exit ${code}: ${stderr().slice(-500)}` });
  });
  let queue: Promise<unknown> = Promise.resolve();
  return {
    call: (method) => {
      const next = queue.then(
        () =>
          new Promise<CallResult>((resolve) => {
            if (child.exitCode !== null) return resolve({ ok: false, code: 'ClientExited', message: stderr().slice(-500) });
            waiting.push(resolve);
            child.stdin.write(`${method}\n`);
          }),
      );
      queue = next;
      return next;
    },
    stderr,
    stop: () => stopChild(child),
  };
}
