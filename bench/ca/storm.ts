/**
 * The CSR storm of bench/ca, in a process of its own (forked by main.ts): makes its CSRs first, then
 * sends them to CreateCertificate over mutual TLS with `concurrency` requests in flight, and reports
 * the latency of each and the wall time.
 */
import * as grpc from '@grpc/grpc-js';
import { MeshCertificateRequest, MeshCertificateResponse } from '../../src/gen/mesh/v1/auth/certificate.js';
import { createCsr, generateKey, type KeyType } from '../../src/ca/x509.js';

export interface StormCommand {
  readonly cmd: 'storm';
  readonly addr: string;
  readonly serverName: string;
  readonly rootPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  readonly identity: string;
  readonly keyType: KeyType;
  readonly total: number;
  readonly concurrency: number;
  readonly channels: number;
}

export type StormEvent =
  | { readonly ev: 'prepared'; readonly ms: number }
  | { readonly ev: 'done'; readonly latenciesMs: number[]; readonly wallMs: number; readonly errors: Record<string, number> };

async function csrs(keyType: KeyType, total: number, identity: string): Promise<string[]> {
  // RSA keys take ~0.1-0.3 s each: a few keys, each in many requests (the CA does the same work per request).
  const distinct = keyType === 'rsa' ? Math.min(total, 16) : total;
  const out: string[] = [];
  for (let i = 0; i < distinct; i++) out.push(await createCsr(await generateKey(keyType), { uris: [identity] }));
  return Array.from({ length: total }, (_, i) => out[i % out.length]);
}

async function storm(c: StormCommand): Promise<void> {
  const t0 = performance.now();
  const pems = await csrs(c.keyType, c.total, c.identity);
  process.send?.({ ev: 'prepared', ms: performance.now() - t0 } satisfies StormEvent);
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  const creds = grpc.credentials.createSsl(Buffer.from(c.rootPem), Buffer.from(c.keyPem), Buffer.from(c.certPem));
  const clients = Array.from({ length: c.channels }, (_, i) => new grpc.Client(c.addr, creds, { 'grpc.ssl_target_name_override': c.serverName, 'grpc.default_authority': c.serverName, 'bench.channel': i }));
  await Promise.all(clients.map((cl) => new Promise<void>((resolve, reject) => cl.waitForReady(Date.now() + 10_000, (err) => (err ? reject(err) : resolve())))));
  const latencies: number[] = [];
  const errors: Record<string, number> = {};
  let next = 0;
  const started = performance.now();
  const one = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const t = performance.now();
      clients[i % clients.length].makeUnaryRequest(
        '/mesh.v1.auth.MeshCertificateService/CreateCertificate',
        (m: MeshCertificateRequest) => Buffer.from(MeshCertificateRequest.encode(m).finish()),
        (b: Buffer) => MeshCertificateResponse.decode(b),
        { csr: pems[i], validityDuration: 3600 },
        (err, res) => {
          if (err) errors[grpc.status[err.code] ?? String(err.code)] = (errors[grpc.status[err.code] ?? String(err.code)] ?? 0) + 1;
          else if (!res || res.certChain.length < 2) errors.EMPTY = (errors.EMPTY ?? 0) + 1;
          else latencies.push(performance.now() - t);
          resolve();
        },
      );
    });
  const worker = async (): Promise<void> => {
    while (next < c.total) await one(next++);
  };
  await Promise.all(Array.from({ length: Math.min(c.concurrency, c.total) }, worker));
  const wallMs = performance.now() - started;
  for (const cl of clients) cl.close();
  latencies.sort((a, b) => a - b);
  // wait until the report is handed to the parent: exiting first can drop a large message
  await new Promise<void>((resolve) => {
    if (!process.send) return resolve();
    process.send({ ev: 'done', latenciesMs: latencies, wallMs, errors } satisfies StormEvent, undefined, {}, () => resolve());
  });
}

process.once('message', (c: StormCommand) => {
  storm(c).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`storm: ${err instanceof Error ? err.stack : String(err)}`);
      process.exit(1);
    },
  );
});
