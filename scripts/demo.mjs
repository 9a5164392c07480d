#!/usr/bin/env node
// The embedded demo: the daemon on the bundled example config and the Mock registry, two real gRPC
// backends where the Mock registry's echo endpoints live (127.0.0.1:17070 v1, :17071 v2), and a real
// proxyless gRPC client (@grpc/grpc-js-xds) that dials xds:///echo.default.svc.cluster.local:7070.
//
//   npm run demo            run, print what the client saw, stop
//   npm run demo -- --keep  leave the daemon and backends running until Ctrl-C
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const ports = { grpc: 15010, secureGrpc: 15012, http: 8080, monitoring: 15014 };

function startBackend(name, port) {
  const server = new grpc.Server();
  const bytes = (v) => Buffer.from(JSON.stringify(v));
  server.addService(
    { Echo: { path: '/mesh.test.Echo/Echo', requestStream: false, responseStream: false, requestSerialize: (b) => b, requestDeserialize: (b) => b, responseSerialize: (b) => b, responseDeserialize: (b) => b } },
    { Echo: (_call, cb) => cb(null, bytes({ backend: name })) },
  );
  return new Promise((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve(server))),
  );
}

async function waitReady(url, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > until) throw new Error(`daemon not ready at ${url}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const backends = await Promise.all([startBackend('echo-v1', 17070), startBackend('echo-v2', 17071)]);
console.log('demo: backends echo-v1 on 127.0.0.1:17070, echo-v2 on 127.0.0.1:17071');

const daemon = spawn(
  process.execPath,
  [
    join(root, 'dist/bin/mesh-discovery.js'), 'discovery',
    '--registries', 'Mock',
    '--configDir', join(root, 'examples/config'),
    '--meshConfig', join(root, 'examples/mesh.yaml'),
    '--grpcAddr', `127.0.0.1:${ports.grpc}`,
    '--secureGRPCAddr', `127.0.0.1:${ports.secureGrpc}`,
    // no webhooks without a cluster to call them
    '--httpsAddr', '',
    '--httpAddr', `127.0.0.1:${ports.http}`,
    '--monitoringAddr', `127.0.0.1:${ports.monitoring}`,
    '--shutdownDuration', '2s',
  ],
  { stdio: ['ignore', 'inherit', 'inherit'] },
);
daemon.on('exit', (code) => {
  if (code !== 0 && code !== null) console.error(`demo: daemon exited with ${code}`);
});
await waitReady(`http://127.0.0.1:${ports.monitoring}/ready`, 20_000);

const bootstrap = {
  xds_servers: [{ server_uri: `127.0.0.1:${ports.grpc}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
  node: { id: 'sidecar~127.0.0.1~demo-client.default~default.svc.cluster.local', metadata: { GENERATOR: 'grpc', NAMESPACE: 'default' }, locality: { region: 'local', zone: 'a' } },
};
const client = spawn(process.execPath, [join(root, 'e2e/support/xds-client-child.mjs')], {
  env: { ...process.env, GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap) },
  stdio: ['pipe', 'pipe', 'inherit'],
});
const answers = createInterface({ input: client.stdout });
const pending = new Map();
answers.on('line', (line) => {
  const msg = JSON.parse(line);
  pending.get(msg.id)?.(msg);
  pending.delete(msg.id);
});
let nextId = 0;
const ask = (cmd) => new Promise((resolve) => {
  const id = ++nextId;
  pending.set(id, resolve);
  client.stdin.write(`${JSON.stringify({ id, ...cmd })}\n`);
});

const target = 'echo.default.svc.cluster.local:7070';
const plain = await ask({ op: 'call', target, count: 100, deadlineMs: 5000 });
const canary = await ask({ op: 'call', target, count: 20, deadlineMs: 5000, metadata: { 'x-canary': 'true' } });
console.log(`demo: 100 calls to xds:///${target}           -> ${JSON.stringify(plain.results)} (VirtualService: 80/20 v1/v2)`);
console.log(`demo: 20 calls with header x-canary: "true"  -> ${JSON.stringify(canary.results)} (VirtualService: v2 only)`);
const failed = (plain.failed ?? 0) + (canary.failed ?? 0);
if (failed > 0) console.log(`demo: ${failed} calls failed: ${JSON.stringify({ ...plain.errors, ...canary.errors })}`);
console.log(`demo: the daemon's view: curl http://127.0.0.1:${ports.http}/debug/syncz | curl http://127.0.0.1:${ports.monitoring}/metrics`);

async function stopAll() {
  await ask({ op: 'exit' }).catch(() => undefined);
  daemon.kill('SIGTERM');
  await new Promise((r) => daemon.once('exit', r));
  for (const b of backends) b.forceShutdown();
}
if (keep) {
  console.log('demo: running; Ctrl-C to stop');
  process.once('SIGINT', () => void stopAll().then(() => process.exit(0)));
} else {
  await stopAll();
  process.exit(failed > 0 || !plain.results?.['echo-v1'] || canary.results?.['echo-v2'] !== 20 ? 1 : 0);
}
