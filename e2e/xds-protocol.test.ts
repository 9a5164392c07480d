/**
 * End-to-end, protocol level: bad or unusual ADS input from a raw client (hand-built
 * DiscoveryRequests, or plain garbage) must neither crash the daemon nor disturb other clients, and
 * must show up in the metrics the spec names.
 *
 * Needs `npm run build` first (the daemon runs from dist/).
 */
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { TypeUrl } from '../src/xds/types.js';
import { SotwStream, followListener, subscribeChain, subscribeListener } from '../test/support/ads-client.js';
import { ECHO_TARGET, serviceEntry } from './support/mesh-config.js';
import { withMesh, type MeshSetup } from './support/mesh.js';
import { xdsClientNode } from './support/xds-client.js';
import { delay, eventually } from '../test/support/eventually.js';

const TEST_TIMEOUT = 60_000;

/** A daemon that knows one gRPC service, and no proxyless client of its own. */
const setup: MeshSetup = {
  backends: { a: {} },
  files: (b) => ({ 'service-entry.yaml': serviceEntry({ endpoints: [{ port: b.a.port }] }) }),
  client: false,
};

/**
 * Bytes no protobuf decoder accepts: field 1 (length-delimited) announces 127 bytes and fewer
 * follow, then random filler.
 */
function malformedRequest(): Buffer {
  return Buffer.concat([Buffer.from([0x0a, 0x7f]), Buffer.from('not a DiscoveryRequest'), randomBytes(24)]);
}

/** Polls a metric until `accept` holds and returns its value. */
function metricUntil(
  daemon: { metric(name: string): Promise<number> },
  name: string,
  accept: (v: number) => boolean,
  timeoutMs = 10_000,
): Promise<number> {
  return eventually(
    `metric ${name}`,
    async () => {
      const v = await daemon.metric(name);
      return accept(v) ? v : undefined;
    },
    { timeoutMs, retryErrors: true },
  );
}

describe('malformed DiscoveryRequest', () => {
  it(
    'ends that stream with an error status and keeps serving another client',
    () =>
      withMesh(setup, async ({ daemon }) => {
        const bad = SotwStream.open(daemon.grpcAddr);
        try {
          bad.sendRequest(malformedRequest());
          const end = await bad.ended(10_000);
          expect([grpc.status.INVALID_ARGUMENT, grpc.status.INTERNAL]).toContain(end.code);
        } finally {
          bad.close();
        }

        const good = SotwStream.open(daemon.grpcAddr);
        try {
          const lds = await subscribeListener(good, ECHO_TARGET, xdsClientNode());
          expect(lds.resources).toHaveLength(1);
          expect(good.status()).toBeUndefined();
        } finally {
          good.close();
        }
        expect(daemon.running()).toBe(true);
        expect(await daemon.ready()).toBe(true);
      }),
    TEST_TIMEOUT,
  );
});

describe('unknown type URL', () => {
  it(
    'does not crash, and the same stream goes on serving known types',
    () =>
      withMesh(setup, async ({ daemon }) => {
        const unknownType = 'type.googleapis.com/mesh.test.v1.NoSuchResource';
        const s = SotwStream.open(daemon.grpcAddr);
        try {
          s.sendRequest({ node: xdsClientNode(), typeUrl: unknownType, resourceNames: ['anything'] });
          s.sendRequest({ typeUrl: TypeUrl.Listener, resourceNames: [ECHO_TARGET] });
          const lds = await s.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 10_000);
          expect(lds.resources).toHaveLength(1);
          expect(s.status()).toBeUndefined();
          // If the daemon answers the unknown type at all, the answer is empty.
          for (const r of s.ofType(unknownType)) expect(r.resources).toHaveLength(0);
        } finally {
          s.close();
        }
        expect(daemon.running()).toBe(true);
      }),
    TEST_TIMEOUT,
  );
});

describe('stale nonce', () => {
  it(
    'is ignored and counted in disc_xds_expired_nonce',
    () =>
      withMesh(setup, async ({ daemon }) => {
        const s = SotwStream.open(daemon.grpcAddr);
        try {
          const lds = await subscribeListener(s, ECHO_TARGET, xdsClientNode());
          const before = await daemon.metric('disc_xds_expired_nonce');
          const mark = s.responses.length;
          s.sendRequest({ typeUrl: TypeUrl.Listener, resourceNames: [ECHO_TARGET], versionInfo: lds.versionInfo, responseNonce: `stale-${lds.nonce}-e2e` });
          await metricUntil(daemon, 'disc_xds_expired_nonce', (v) => v > before);

          // Requests on one stream are handled in order: once the RDS/CDS subscriptions sent after
          // the stale request are answered, any answer to the stale request would have come first.
          const next = await followListener(s, lds);
          expect(next.cds.resources.length).toBeGreaterThan(0);
          expect(s.responses.slice(mark).filter((r) => r.typeUrl === TypeUrl.Listener)).toHaveLength(0);
          expect(s.status()).toBeUndefined();
        } finally {
          s.close();
        }
      }),
    TEST_TIMEOUT,
  );
});

describe('NACK', () => {
  it.each([
    { type: 'lds', gauge: 'disc_xds_lds_reject' },
    { type: 'cds', gauge: 'disc_xds_cds_reject' },
  ])(
    'of $type is counted in disc_total_xds_rejects and $gauge, and not answered by a resend loop',
    ({ type, gauge }) =>
      withMesh(setup, async ({ daemon }) => {
        const s = SotwStream.open(daemon.grpcAddr);
        try {
          const rejectsBefore = await daemon.metric('disc_total_xds_rejects');
          let typeUrl: string;
          let names: string[];
          let rejected: { nonce: string; versionInfo: string };
          if (type === 'lds') {
            typeUrl = TypeUrl.Listener;
            names = [ECHO_TARGET];
            s.sendRequest({ node: xdsClientNode(), typeUrl, resourceNames: names });
            rejected = await s.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 10_000);
          } else {
            typeUrl = TypeUrl.Cluster;
            const chain = await subscribeChain(s, ECHO_TARGET, xdsClientNode());
            names = chain.clusters;
            rejected = chain.cds;
          }

          const mark = s.responses.length;
          s.sendRequest({
            typeUrl,
            resourceNames: names,
            versionInfo: '', // nothing of this type was ever accepted
            responseNonce: rejected.nonce,
            errorDetail: { code: grpc.status.INVALID_ARGUMENT, message: `e2e: ${type} rejected on purpose`, details: [] },
          });
          await metricUntil(daemon, 'disc_total_xds_rejects', (v) => v > rejectsBefore);
          await metricUntil(daemon, gauge, (v) => v > 0);

          // A bounded observation window: a daemon stuck re-sending the rejected version would
          // push it again and again within it.
          await delay(2000);
          const resent = s.responses.slice(mark).filter((r) => r.typeUrl === typeUrl && r.versionInfo === rejected.versionInfo);
          expect(resent.length).toBeLessThanOrEqual(1);
          expect(s.status()).toBeUndefined();
          expect(daemon.running()).toBe(true);
        } finally {
          s.close();
        }
      }),
    TEST_TIMEOUT,
  );
});
