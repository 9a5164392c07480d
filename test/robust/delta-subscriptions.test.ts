/**
 * Delta xDS subscriptions cost what they change (in process, real gRPC on loopback): a proxy holding
 * 100,000 EDS names that subscribes to 500 more, one at a time, is answered with each new name only,
 * and its unsubscribes need no answer. Before, each subscribe copied and regenerated the whole
 * subscription (22 CPU-seconds for this storm).
 */
import { jest } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { MAX_DELTA_NAMES } from '../../src/xds/ads-server.js';
import type { DeltaDiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { TypeUrl } from '../../src/xds/types.js';
import { deltaNames } from '../support/ads-client.js';
import { toYamlDocuments } from '../support/daemon.js';
import { sidecarNode, startAds, type Harness } from '../xds/ads-harness.js';
import { meshObjects } from './support.js';

jest.setTimeout(120_000);

const SERVICES = 40;
const HELD = 100_000;
const STEPS = 500;
/** Server and client CPU for the 500 subscribes and their answers (the storm cost 22 s before). */
const CPU_BOUND_MS = 4000;

const cluster = (i: number): string => `outbound|8080||svc-${i}.ns-${i % 5}.svc.cluster.local`;
const absent = (i: number): string => `outbound|8080||absent-${i}.ns-0.svc.cluster.local`;

describe('delta subscriptions on a large set', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startAds(toYamlDocuments(meshObjects(SERVICES)));
  });

  afterAll(async () => {
    await h?.close();
  });

  it('answer each subscribe with its own names, at a cost proportional to the change', async () => {
    const d = h.delta(sidecarNode('ns-0'));
    // the first half of the services' clusters, and many names that resolve to nothing
    const initial = [...Array.from({ length: SERVICES / 2 }, (_, i) => cluster(i)), ...Array.from({ length: HELD - SERVICES / 2 }, (_, i) => absent(i))];
    // in requests of 20,000 names (a request of 100,000 passes gRPC's 4 MB default)
    const got: string[] = [];
    for (let i = 0; i < HELD; i += 20_000) {
      d.send({ typeUrl: TypeUrl.Endpoint, subscribe: initial.slice(i, i + 20_000) });
      const res = await d.next(30_000);
      got.push(...deltaNames(res));
      expect(res.removedResources.length).toBe(Math.min(20_000, HELD - i) - deltaNames(res).length); // the names of nothing
      d.ack(res);
    }
    expect(got.sort()).toEqual(initial.slice(0, SERVICES / 2).sort());

    const cpu = process.cpuUsage();
    const answers: DeltaDiscoveryResponse[] = [];
    for (let step = 0; step < STEPS; step++) {
      // the other services' clusters, then names of nothing; every tenth step also drops a name
      const name = step < SERVICES / 2 ? cluster(SERVICES / 2 + step) : absent(HELD + step);
      d.send({ typeUrl: TypeUrl.Endpoint, subscribe: [name], unsubscribe: step % 10 === 9 ? [absent(step)] : [] });
      const res = await d.next(10_000);
      answers.push(res);
      d.ack(res);
    }
    const used = process.cpuUsage(cpu);
    const cpuMs = (used.user + used.system) / 1000;

    // each answer carries the one new name, or says that it does not exist, and nothing else
    for (let step = 0; step < STEPS; step++) {
      const exists = step < SERVICES / 2;
      expect({ step, names: deltaNames(answers[step]), removed: answers[step].removedResources }).toEqual({
        step,
        names: exists ? [cluster(SERVICES / 2 + step)] : [],
        removed: exists ? [] : [absent(HELD + step)],
      });
    }
    expect(cpuMs).toBeLessThan(CPU_BOUND_MS);

    // an unsubscribe alone is not answered; the subscription still gets changes of what it holds
    d.send({ typeUrl: TypeUrl.Endpoint, unsubscribe: [cluster(0)] });
    expect(await d.quietTypes()).toEqual([]);
    const conn = [...h.ads.connections.values()][0];
    expect(conn.watches.get(TypeUrl.Endpoint)?.names?.size).toBe(HELD + STEPS - STEPS / 10 - 1);
    const change = meshObjects(SERVICES).map((o) => {
      const se = o as { kind: string; metadata: { name: string }; spec: { endpoints?: Array<{ address: string }> } };
      if (se.kind === 'ServiceEntry' && (se.metadata.name === 'svc-0' || se.metadata.name === 'svc-39')) se.spec.endpoints!.push({ address: '10.9.9.9' });
      return o;
    });
    await h.change(toYamlDocuments(change), { origin: 'test.yaml' });
    const pushed = await d.next(10_000);
    expect(deltaNames(pushed)).toEqual([cluster(39)]); // svc-0 was dropped
  });
});

describe('the bound on a delta subscription', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startAds(toYamlDocuments(meshObjects(5)));
  });

  afterAll(async () => {
    await h?.close();
  });

  async function subscribeUntilRefused(d: ReturnType<Harness['delta']>, batch: (i: number) => string[], most: number): Promise<number> {
    for (let i = 0; i < most; i++) {
      d.send({ typeUrl: TypeUrl.Endpoint, subscribe: batch(i) });
      const res = await Promise.race([d.next(30_000), d.ended(30_000)]);
      if ('code' in res) return i;
      d.ack(res);
    }
    return most;
  }

  it(`holds at most ${MAX_DELTA_NAMES} names per type: a subscribe past it ends the stream with RESOURCE_EXHAUSTED, counted`, async () => {
    const d = h.delta(sidecarNode('ns-0'));
    // 200,000 names in requests of 20,000 are taken; one more name is not
    const taken = await subscribeUntilRefused(d, (i) => (i < 10 ? Array.from({ length: 20_000 }, (_, j) => absent(i * 20_000 + j)) : [absent(999_999)]), 11);
    expect(taken).toBe(10);
    const end = await d.ended(5000);
    expect(end.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(end.details).toContain(`at most ${MAX_DELTA_NAMES} names`);
    expect(await h.metric('disc_xds_subscription_too_large', { type: 'eds' })).toBe(1);
  });

  it('and at most 16 MiB of names per type', async () => {
    const d = h.delta(sidecarNode('ns-1'));
    // names of 2,000 bytes, 2,000 per request (4 MB, under gRPC's default bound per message)
    const long = (i: number, j: number): string => `outbound|8080||${'x'.repeat(1950)}-${i}-${j}.ns-1.svc.cluster.local`;
    const taken = await subscribeUntilRefused(d, (i) => Array.from({ length: 2000 }, (_, j) => long(i, j)), 10);
    expect(taken).toBe(4); // 16 MB held; the fifth request would make it 20 MB
    const end = await d.ended(5000);
    expect(end.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(await h.metric('disc_xds_subscription_too_large', { type: 'eds' })).toBe(2);
  });
});
