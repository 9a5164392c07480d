/**
 * A real gRPC backend for the end-to-end tests: one server on 127.0.0.1 with the unary method
 * `/mesh.test.Echo/Echo`. Messages are JSON bytes, so no .proto file is involved: the service is
 * declared with its path and serializers. Each reply names the backend that answered and echoes the
 * request metadata the test cares about, so a test can tell where a call went and what it carried.
 */
import * as grpc from '@grpc/grpc-js';

export const ECHO_SERVICE = 'mesh.test.Echo';
export const ECHO_METHOD_PATH = `/${ECHO_SERVICE}/Echo`;

export interface EchoRequest {
  readonly message?: string;
}

export interface EchoReply {
  /** Name of the backend that answered. */
  readonly backend: string;
  /** Selected request metadata (see `BackendOptions.echoHeaders`). */
  readonly headers: Record<string, string>;
  readonly message?: string;
}

function jsonSerialize(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value ?? {}), 'utf8');
}

function jsonDeserialize(bytes: Buffer): unknown {
  return bytes.length === 0 ? {} : JSON.parse(bytes.toString('utf8'));
}

/** The Echo service, declared by path with JSON serializers (usable by servers and clients alike). */
export const echoServiceDefinition: grpc.ServiceDefinition = {
  Echo: {
    path: ECHO_METHOD_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: jsonSerialize,
    requestDeserialize: jsonDeserialize,
    responseSerialize: jsonSerialize,
    responseDeserialize: jsonDeserialize,
  },
};

export interface BackendOptions {
  /**
   * Which request metadata keys to echo back. Default: every key starting with `x-`.
   * Binary (`-bin`) keys are echoed base64-encoded.
   */
  readonly echoHeaders?: ReadonlyArray<string> | ((key: string) => boolean);
  /** Address to listen on (default 127.0.0.1), e.g. a simulated pod's IP. */
  readonly host?: string;
  /** Port to listen on (default: one picked by the system). */
  readonly port?: number;
}

export interface Backend {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  /** `127.0.0.1:<port>` */
  readonly address: string;
  /** Calls received since start (or since the last `resetCalls`), failed ones included. */
  calls(): number;
  resetCalls(): void;
  /** Fail the next `n` calls with `code` (default UNAVAILABLE) before answering normally again. */
  failNext(n: number, code?: grpc.status, details?: string): void;
  /** Metadata (as echoed) of the last call received, if any. */
  lastHeaders(): Record<string, string> | undefined;
  stop(): Promise<void>;
}

function headerSelector(opt: BackendOptions['echoHeaders']): (key: string) => boolean {
  if (opt === undefined) return (key) => key.startsWith('x-');
  if (typeof opt === 'function') return opt;
  const wanted = new Set(opt.map((k) => k.toLowerCase()));
  return (key) => wanted.has(key);
}

function selectHeaders(metadata: grpc.Metadata, keep: (key: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata.getMap())) {
    if (!keep(key)) continue;
    out[key] = Buffer.isBuffer(value) ? value.toString('base64') : String(value);
  }
  return out;
}

/** Starts an Echo backend, by default on 127.0.0.1 with a port picked by the system. */
export async function startBackend(name: string, options: BackendOptions = {}): Promise<Backend> {
  const keep = headerSelector(options.echoHeaders);
  let received = 0;
  let failures: { remaining: number; code: grpc.status; details: string } | undefined;
  let last: Record<string, string> | undefined;

  const server = new grpc.Server();
  const echo: grpc.handleUnaryCall<EchoRequest, EchoReply> = (call, callback) => {
    received++;
    const headers = selectHeaders(call.metadata, keep);
    last = headers;
    if (failures && failures.remaining > 0) {
      failures.remaining--;
      const { code, details } = failures;
      if (failures.remaining === 0) failures = undefined;
      callback({ code, details, metadata: new grpc.Metadata() });
      return;
    }
    const reply: EchoReply = { backend: name, headers, ...(call.request?.message !== undefined ? { message: call.request.message } : {}) };
    callback(null, reply);
  };
  server.addService(echoServiceDefinition, { Echo: echo as grpc.UntypedHandleCall });

  const host = options.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${options.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (err, boundPort) => (err ? reject(err) : resolve(boundPort)));
  });

  let stopped: Promise<void> | undefined;
  return {
    name,
    host,
    port,
    address: `${host}:${port}`,
    calls: () => received,
    resetCalls: () => {
      received = 0;
    },
    failNext: (n, code = grpc.status.UNAVAILABLE, details) => {
      failures = n > 0 ? { remaining: n, code, details: details ?? `${name}: failing on purpose (${n} left)` } : undefined;
    },
    lastHeaders: () => last,
    stop: () => {
      stopped ??= new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return stopped;
    },
  };
}

export interface DirectEchoOptions {
  readonly metadata?: Record<string, string>;
  readonly deadlineMs?: number;
  readonly message?: string;
}

/** One Echo call straight to an address (no xDS), for checking a backend on its own. */
export async function directEcho(address: string, options: DirectEchoOptions = {}): Promise<EchoReply> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  try {
    const metadata = new grpc.Metadata();
    for (const [k, v] of Object.entries(options.metadata ?? {})) metadata.set(k, v);
    return await new Promise<EchoReply>((resolve, reject) => {
      client.makeUnaryRequest<EchoRequest, EchoReply>(
        ECHO_METHOD_PATH,
        (req) => jsonSerialize(req),
        (bytes) => jsonDeserialize(bytes) as EchoReply,
        options.message !== undefined ? { message: options.message } : {},
        metadata,
        { deadline: Date.now() + (options.deadlineMs ?? 2000) },
        (err, reply) => (err || !reply ? reject(err ?? new Error('empty reply')) : resolve(reply)),
      );
    });
  } finally {
    client.close();
  }
}
