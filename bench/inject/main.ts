/**
 * Injection benchmark: meshd's webhook server (src/server/webhooks.ts) with the injector inputs of
 * the ConfigMap `meshctl install` renders, in a child process of its own, and --concurrency clients
 * sending AdmissionReviews of a pod over HTTPS (keep-alive) for --seconds. Prints injections per
 * second and latency percentiles; asserts nothing.
 *
 *   npm run bench:inject -- [--concurrency 200] [--seconds 15]
 */
import { execFileSync, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { injectorConfigMapContent } from '../../src/inject/config.js';
import { allObjects, renderManifests } from '../../src/install/render/index.js';
import { resolveSpec } from '../../src/install/resolve.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { WebhookServer } from '../../src/server/webhooks.js';
import { percentile, table } from '../xds/stats.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : def;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name}: ${process.argv[i + 1]} is not a positive number`);
  return v;
}

async function serve(dir: string): Promise<void> {
  const resolved = await resolveSpec({ sets: ['namespace=mesh-system'] });
  const cm = allObjects(renderManifests(resolved.spec, { owner: { name: 'bench', namespace: 'mesh-system' }, crds: [] })).find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'mesh-sidecar-injector') as unknown as { data: Record<string, string> };
  const content = injectorConfigMapContent(cm.data, 'ConfigMap mesh-system/mesh-sidecar-injector');
  const material = { keyPem: readFileSync(join(dir, 'key.pem'), 'utf8'), certChainPem: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  const server = new WebhookServer({
    tls: { current: () => material },
    injector: () => ({ inputs: { ...content, mesh: { trustDomain: 'cluster.local' }, revision: 'default', domain: 'cluster.local', clusterSupportsNativeSidecars: true, probeLocalhost: false, legacyFsGroup: true } }),
    metrics: createMetrics({ defaultMetrics: false }),
    log: pino({ level: 'silent' }),
  });
  const port = await server.listen({ host: '127.0.0.1', port: 0 });
  process.send?.({ port });
}

function review(): string {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'web-7d9f-', namespace: 'shop', labels: { app: 'web', version: 'v1' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f', uid: 'u', controller: true }] },
    spec: {
      serviceAccountName: 'web',
      containers: [{ name: 'web', image: 'nginx', ports: [{ name: 'http', containerPort: 8080 }], readinessProbe: { httpGet: { path: '/ready', port: 'http' } } }],
    },
  };
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: randomUUID(), kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, namespace: 'shop', operation: 'CREATE', object: pod },
  });
}

async function drive(): Promise<void> {
  const concurrency = arg('concurrency', 200);
  const seconds = arg('seconds', 15);
  const dir = mkdtempSync(join(tmpdir(), 'mesh-bench-inject-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' });
  const child = fork(fileURLToPath(import.meta.url), ['--serve', dir], { stdio: 'inherit' });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m: { port: number }) => resolve(m.port));
      child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca: readFileSync(join(dir, 'cert.pem')), servername: 'localhost' });
    const once = (body: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const start = process.hrtime.bigint();
        const req = request({ host: '127.0.0.1', port, path: '/inject', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200 || !text.includes('"patchType":"JSONPatch"')) reject(new Error(`not injected: ${res.statusCode} ${text.slice(0, 200)}`));
            else resolve(Number(process.hrtime.bigint() - start) / 1e6);
          });
        });
        req.on('error', reject);
        req.end(body);
      });
    // warm-up: connections and the JIT
    await Promise.all(Array.from({ length: concurrency }, () => once(review())));
    const latencies: number[] = [];
    const started = Date.now();
    const end = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < end) latencies.push(await once(review()));
      }),
    );
    const elapsed = (Date.now() - started) / 1000;
    agent.destroy();
    latencies.sort((a, b) => a - b);
    const ms = (v: number): string => v.toFixed(1);
    console.log(`bench/inject: ${concurrency} concurrent AdmissionReviews for ${seconds} s (server in its own process, HTTPS keep-alive)`);
    console.log(table(['injections', 'per second', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'], [[String(latencies.length), (latencies.length / elapsed).toFixed(0), ms(percentile(latencies, 50)), ms(percentile(latencies, 90)), ms(percentile(latencies, 99)), ms(latencies[latencies.length - 1] ?? NaN)]]));
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

const serveAt = process.argv.indexOf('--serve');
if (serveAt >= 0) await serve(process.argv[serveAt + 1] ?? '');
else await drive();
