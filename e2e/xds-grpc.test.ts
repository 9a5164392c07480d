/**
 * End-to-end: the daemon serves real proxyless gRPC clients (grpc-js-xds, one process each) that
 * call real Echo backends. Configuration comes from files in the daemon's --configDir; each test
 * builds its own world (backends, config directory, daemon, client) and tears it down.
 *
 * Needs `npm run build` first (the daemon runs from dist/).
 */
import * as grpc from '@grpc/grpc-js';
import { destination, destinationRule, ECHO_TARGET, serviceEntry, virtualService, weightedVirtualService } from './support/mesh-config.js';
import { withMesh } from './support/mesh.js';
import type { CallResult } from './support/xds-client.js';
import { eventually } from '../test/support/eventually.js';

const TEST_TIMEOUT = 90_000;

/** Every call succeeded and all of them reached `backend`. */
const allTo =
  (backend: string) =>
  (r: CallResult): boolean =>
    r.failed === 0 && r.ok > 0 && r.results[backend] === r.ok;

/** Every call succeeded and each named backend got at least one. */
const spreadOver =
  (...backends: string[]) =>
  (r: CallResult): boolean =>
    r.failed === 0 && backends.every((b) => (r.results[b] ?? 0) > 0);

/** Backends a (version v1) and b (version v2) behind one ServiceEntry, with subsets v1 and v2. */
const twoVersions = (b: Readonly<Record<string, { port: number }>>) => ({
  'service-entry.yaml': serviceEntry({ endpoints: [{ port: b.a.port, version: 'v1' }, { port: b.b.port, version: 'v2' }] }),
  'destination-rule.yaml': destinationRule({ subsets: ['v1', 'v2'] }),
});

describe('weighted subsets', () => {
  it(
    'splits traffic 80/20 between subsets v1 and v2',
    () =>
      withMesh(
        {
          backends: { a: {}, b: {} },
          files: (b) => ({ ...twoVersions(b), 'virtual-service.yaml': weightedVirtualService({ v1: 80, v2: 20 }) }),
        },
        async ({ client }) => {
          await client.callUntil(ECHO_TARGET, { count: 40 }, spreadOver('a', 'b'), 20_000, 'both subsets to answer');
          const r = await client.call(ECHO_TARGET, { count: 200, concurrency: 4 });
          expect(r.errors).toEqual({});
          expect(r.ok).toBe(200);
          // 80 % ± 10 points of 200 calls (a binomial spread of ~5.7 calls, so ±20 is > 3 sigma).
          expect(r.results.a ?? 0).toBeGreaterThanOrEqual(140);
          expect(r.results.a ?? 0).toBeLessThanOrEqual(180);
          expect((r.results.a ?? 0) + (r.results.b ?? 0)).toBe(200);
        },
      ),
    TEST_TIMEOUT,
  );
});

describe('header match', () => {
  it(
    'sends x-canary: "true" to v2 and everything else to v1',
    () =>
      withMesh(
        {
          backends: { a: {}, b: {} },
          files: (b) => ({
            ...twoVersions(b),
            'virtual-service.yaml': virtualService({
              http: [
                { match: [{ headers: { 'x-canary': { exact: 'true' } } }], route: [destination('v2')] },
                { route: [destination('v1')] },
              ],
            }),
          }),
        },
        async ({ client }) => {
          const canary = await client.callUntil(ECHO_TARGET, { count: 20, metadata: { 'x-canary': 'true' } }, allTo('b'), 20_000, 'canary calls on v2');
          expect(canary.lastReply?.headers['x-canary']).toBe('true');
          const plain = await client.call(ECHO_TARGET, { count: 20 });
          expect(plain.results).toEqual({ a: 20 });
          const notCanary = await client.call(ECHO_TARGET, { count: 20, metadata: { 'x-canary': 'false' } });
          expect(notCanary.results).toEqual({ a: 20 });
          const again = await client.call(ECHO_TARGET, { count: 20, metadata: { 'x-canary': 'true' } });
          expect(again.results).toEqual({ b: 20 });
        },
      ),
    TEST_TIMEOUT,
  );
});

describe('retries and fault injection', () => {
  it(
    'retries UNAVAILABLE up to the configured attempts, so the call succeeds',
    () =>
      withMesh(
        {
          backends: { a: {} },
          files: (b) => ({
            'service-entry.yaml': serviceEntry({ endpoints: [{ port: b.a.port, version: 'v1' }] }),
            'destination-rule.yaml': destinationRule({ subsets: ['v1'] }),
            'virtual-service.yaml': virtualService({ http: [{ route: [destination('v1')], retries: { attempts: 3, retryOn: 'unavailable' } }] }),
          }),
        },
        async ({ client, backends: { a } }) => {
          await client.callUntil(ECHO_TARGET, { count: 5 }, allTo('a'), 20_000, 'traffic to reach backend a');
          // The retry policy travels with the same route as the traffic, so it is in force now.
          a.resetCalls();
          a.failNext(2, grpc.status.UNAVAILABLE);
          const r = await client.call(ECHO_TARGET, { count: 1, deadlineMs: 5000 });
          expect(r.errors).toEqual({});
          expect(r.results).toEqual({ a: 1 });
          expect(a.calls()).toBe(3);
        },
      ),
    TEST_TIMEOUT,
  );

  it(
    'aborts calls with UNAVAILABLE before they reach the backend',
    () =>
      withMesh(
        {
          backends: { a: {} },
          files: (b) => ({
            'service-entry.yaml': serviceEntry({ endpoints: [{ port: b.a.port, version: 'v1' }] }),
            'destination-rule.yaml': destinationRule({ subsets: ['v1'] }),
            'virtual-service.yaml': virtualService({ http: [{ route: [destination('v1')] }] }),
          }),
        },
        async ({ client, dir, backends: { a } }) => {
          // First prove the path works, so the failures below cannot come from a missing route.
          await client.callUntil(ECHO_TARGET, { count: 5 }, allTo('a'), 20_000, 'traffic to reach backend a');
          await dir.write(
            'virtual-service.yaml',
            virtualService({
              http: [{ fault: { abort: { percentage: { value: 100 }, grpcStatus: 'UNAVAILABLE' } }, route: [destination('v1')] }],
            }),
          );
          await client.callUntil(ECHO_TARGET, { count: 5 }, (r) => r.codes.UNAVAILABLE === 5, 10_000, 'the abort fault to apply');
          const before = a.calls();
          const r = await client.call(ECHO_TARGET, { count: 20 });
          expect(r.ok).toBe(0);
          expect(r.codes).toEqual({ UNAVAILABLE: 20 });
          // grpc-js-xds's fault filter reports its own aborts this way.
          expect(Object.keys(r.errors).every((k) => k.includes('Fault injected'))).toBe(true);
          expect(a.calls()).toBe(before);
        },
      ),
    TEST_TIMEOUT,
  );
});

describe('config file edits', () => {
  it(
    'moves traffic from v1 to v2 within 5 s of the VirtualService file being rewritten',
    () =>
      withMesh(
        {
          backends: { a: {}, b: {} },
          files: (b) => ({ ...twoVersions(b), 'virtual-service.yaml': weightedVirtualService({ v1: 100, v2: 0 }) }),
        },
        async ({ client, dir }) => {
          await client.callUntil(ECHO_TARGET, { count: 20 }, allTo('a'), 20_000, 'all traffic on v1');
          await dir.write('virtual-service.yaml', weightedVirtualService({ v1: 0, v2: 100 }));
          // The 5 s bound is the acceptance criterion: the wait fails if the move takes longer.
          await client.callUntil(ECHO_TARGET, { count: 10 }, allTo('b'), 5_000, 'all traffic on v2 within 5 s of the edit');
          // And it stays there.
          expect((await client.call(ECHO_TARGET, { count: 30 })).results).toEqual({ b: 30 });
        },
      ),
    TEST_TIMEOUT,
  );
});

describe('endpoint removal', () => {
  it(
    'stops sending calls to an endpoint removed from the ServiceEntry',
    () =>
      withMesh(
        {
          backends: { a: {}, b: {} },
          files: (b) => ({ 'service-entry.yaml': serviceEntry({ endpoints: [{ port: b.a.port }, { port: b.b.port }] }) }),
        },
        async ({ client, dir, backends }) => {
          await client.callUntil(ECHO_TARGET, { count: 20 }, spreadOver('a', 'b'), 20_000, 'both endpoints to get traffic');
          await dir.write('service-entry.yaml', serviceEntry({ endpoints: [{ port: backends.a.port }] }));
          await client.callUntil(ECHO_TARGET, { count: 20 }, allTo('a'), 10_000, 'traffic to leave the removed endpoint');
          const before = backends.b.calls();
          const r = await client.call(ECHO_TARGET, { count: 50, concurrency: 4 });
          expect(r.results).toEqual({ a: 50 });
          expect(backends.b.calls()).toBe(before);
        },
      ),
    TEST_TIMEOUT,
  );
});

describe('broken config files', () => {
  it(
    'keeps serving the last good config next to invalid files and counts the rejects',
    () =>
      withMesh(
        {
          backends: { a: {}, b: {} },
          files: (b) => ({ ...twoVersions(b), 'virtual-service.yaml': weightedVirtualService({ v1: 100 }) }),
        },
        async ({ client, dir, daemon }) => {
          await client.callUntil(ECHO_TARGET, { count: 20 }, allTo('a'), 20_000, 'all traffic on v1');

          await dir.write('broken-yaml.yaml', 'apiVersion: networking.mesh.io/v1\nkind: VirtualService\nmetadata: {name: broken\nspec: [unterminated\n');
          // Would send everything to v2 if it were (wrongly) accepted.
          await dir.write(
            'bad-virtual-service.yaml',
            virtualService({ name: 'echo-bad-weight', http: [{ route: [destination('v2', 'abc'), destination('v1', 0)] }] }),
          );

          const rejected = await eventually('disc_total_rejected_configs > 0', async () => {
            const n = await daemon.metric('disc_total_rejected_configs');
            return n > 0 ? n : undefined;
          }, { timeoutMs: 10_000, retryErrors: true });
          expect(rejected).toBeGreaterThan(0);

          expect(daemon.running()).toBe(true);
          expect(await daemon.ready()).toBe(true);
          const r = await client.call(ECHO_TARGET, { count: 40 });
          expect(r.results).toEqual({ a: 40 });

          // The daemon still takes good edits made after the bad files appeared.
          await dir.write('virtual-service.yaml', weightedVirtualService({ v2: 100 }));
          await client.callUntil(ECHO_TARGET, { count: 10 }, allTo('b'), 10_000, 'a later good edit to apply');
        },
      ),
    TEST_TIMEOUT,
  );
});
