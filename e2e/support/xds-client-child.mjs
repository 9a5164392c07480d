// A proxyless gRPC client driven over stdin, run as a child process by xds-client.ts. (Not named
// xds-client.mjs: Jest maps `./xds-client.js` imports to `./xds-client` and would pick the .mjs file.)
//
// grpc-js-xds reads its bootstrap once per process (GRPC_XDS_BOOTSTRAP_CONFIG, set by the parent), so
// every simulated client is its own process. Commands arrive as JSON lines on stdin; each gets exactly
// one JSON line on stdout with the same id. Channels stay open between commands, so a test sees
// configuration pushed over time. Diagnostics go to stderr only: stdout carries answers and nothing else.
//
// Commands:
//   {"id":1,"op":"ping"}                                   -> {"id":1,"ok":true}
//   {"id":2,"op":"call","target":"host:port","count":50,    -> {"id":2,"results":{"backend-a":40,...},
//    "metadata":{"x-canary":"true"},"deadlineMs":2000,           "errors":{"UNAVAILABLE: ...":n},
//    "concurrency":1,"message":"hi"}                             "codes":{"UNAVAILABLE":n},"ok":n,"failed":n,
//                                                                "lastReply":{...}}
//   {"id":3,"op":"state","target":"host:port"}             -> {"id":3,"state":"READY"}
//   {"id":4,"op":"close","target":"host:port"}             -> {"id":4,"ok":true}
//   {"id":5,"op":"exit"}                                   -> {"id":5,"ok":true}, then the process exits
// A command that cannot be run answers {"id":n,"error":"..."}.
import { createInterface } from 'node:readline';
import grpc from '@grpc/grpc-js';
import grpcXds from '@grpc/grpc-js-xds';

const ECHO_METHOD_PATH = '/mesh.test.Echo/Echo';

if (!process.env.GRPC_XDS_BOOTSTRAP_CONFIG && !process.env.GRPC_XDS_BOOTSTRAP) {
  process.stderr.write('xds-client: GRPC_XDS_BOOTSTRAP_CONFIG is not set\n');
  process.exit(2);
}
grpcXds.register();

/** target -> grpc.Client on `xds:///target` */
const clients = new Map();

function clientFor(target) {
  let client = clients.get(target);
  if (!client) {
    client = new grpc.Client(`xds:///${target}`, grpc.credentials.createInsecure());
    clients.set(target, client);
  }
  return client;
}

const serialize = (value) => Buffer.from(JSON.stringify(value), 'utf8');
const deserialize = (bytes) => (bytes.length === 0 ? {} : JSON.parse(bytes.toString('utf8')));

function statusName(code) {
  return grpc.status[code] ?? `CODE_${code}`;
}

function echoOnce(client, metadataObj, deadlineMs, message) {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(metadataObj ?? {})) metadata.set(key, String(value));
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      ECHO_METHOD_PATH,
      serialize,
      deserialize,
      message === undefined ? {} : { message },
      metadata,
      { deadline: Date.now() + deadlineMs },
      (err, reply) => {
        if (err) resolve({ ok: false, code: err.code ?? grpc.status.UNKNOWN, details: err.details ?? err.message });
        else resolve({ ok: true, reply });
      },
    );
  });
}

async function runCall(cmd) {
  if (typeof cmd.target !== 'string' || cmd.target === '') throw new Error('call: "target" (host:port) is required');
  const count = Number.isInteger(cmd.count) && cmd.count > 0 ? cmd.count : 1;
  const concurrency = Math.min(count, Number.isInteger(cmd.concurrency) && cmd.concurrency > 0 ? cmd.concurrency : 1);
  const deadlineMs = typeof cmd.deadlineMs === 'number' && cmd.deadlineMs > 0 ? cmd.deadlineMs : 2000;
  const client = clientFor(cmd.target);
  const out = { results: {}, errors: {}, codes: {}, ok: 0, failed: 0 };
  let started = 0;
  const worker = async () => {
    while (started < count) {
      started++;
      const r = await echoOnce(client, cmd.metadata, deadlineMs, cmd.message);
      if (r.ok) {
        const backend = typeof r.reply?.backend === 'string' ? r.reply.backend : '<no backend field>';
        out.results[backend] = (out.results[backend] ?? 0) + 1;
        out.ok++;
        out.lastReply = r.reply;
      } else {
        const name = statusName(r.code);
        const key = `${name}: ${r.details}`;
        out.errors[key] = (out.errors[key] ?? 0) + 1;
        out.codes[name] = (out.codes[name] ?? 0) + 1;
        out.failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

function closeAll() {
  for (const client of clients.values()) client.close();
  clients.clear();
}

async function handle(cmd) {
  switch (cmd.op) {
    case 'ping':
      return { ok: true };
    case 'call':
      return runCall(cmd);
    case 'state': {
      if (typeof cmd.target !== 'string') throw new Error('state: "target" is required');
      const state = clientFor(cmd.target).getChannel().getConnectivityState(Boolean(cmd.connect));
      return { state: grpc.connectivityState[state] };
    }
    case 'close': {
      const client = clients.get(cmd.target);
      if (client) client.close();
      clients.delete(cmd.target);
      return { ok: true };
    }
    case 'exit':
      return { ok: true };
    default:
      throw new Error(`unknown op ${JSON.stringify(cmd.op)}`);
  }
}

function answer(obj) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (err) {
    answer({ id: null, error: `bad command line: ${err.message}` });
    return;
  }
  handle(cmd).then(
    (result) => {
      answer({ id: cmd.id, ...result });
      if (cmd.op === 'exit') {
        closeAll();
        process.exit(0);
      }
    },
    (err) => answer({ id: cmd.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
lines.on('close', () => {
  closeAll();
  process.exit(0);
});
