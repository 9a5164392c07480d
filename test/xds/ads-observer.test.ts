/**
 * The ADS server's observer: `acked(proxy, typeUrl, version)` tells which snapshot a proxy holds per
 * type (what config distribution tracking needs), from ACKs and from pushes with nothing new.
 */
import type { Proxy } from '../../src/model/proxy.js';
import { TypeUrl } from '../../src/xds/types.js';
import { echoRoute, grpcNode, startAds, type Harness } from './ads-harness.js';
import { eventually } from '../support/eventually.js';

const ECHO = 'echo.default.svc.cluster.local';
const LISTENER = `${ECHO}:7070`;


interface Acked {
  readonly proxy: string;
  readonly typeUrl: string;
  readonly version: string;
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function start(yaml: string, acked: Acked[], connected: string[]): Promise<Harness> {
  h = await startAds(yaml, {
    observer: {
      connected: (p: Proxy) => void connected.push(p.id),
      acked: (p: Proxy, typeUrl: string, version: string) => void acked.push({ proxy: p.id, typeUrl, version }),
    },
  });
  return h;
}

describe('ADS observer: acked', () => {
  it('reports each ACKed type at the snapshot version it was built from, not NACKs', async () => {
    const acked: Acked[] = [];
    const connected: string[] = [];
    const harness = await start(echoRoute('1s'), acked, connected);
    const version = harness.tm.model.current().push.version;
    const s = harness.sotw(grpcNode());
    s.send({ typeUrl: TypeUrl.Listener, names: [LISTENER] });
    const lds = await s.next();
    expect(acked).toEqual([]); // sent, not yet ACKed
    s.ack(lds, [LISTENER]);
    s.send({ typeUrl: TypeUrl.Route, names: [LISTENER] });
    const rds = await s.next();
    s.nack(rds, 'rejected for the test', [LISTENER]);
    await eventually('the NACK', async () => (await harness.metric('disc_total_xds_rejects')) === 1, { timeoutMs: 3000 });
    expect(connected).toEqual([grpcNode().id]);
    expect(acked).toEqual([{ proxy: grpcNode().id, typeUrl: TypeUrl.Listener, version }]);
  });

  it('after a change, reports the new version for the re-sent type once ACKed and for the unchanged one at once', async () => {
    const acked: Acked[] = [];
    const harness = await start(echoRoute('1s'), acked, []);
    const s = harness.sotw(grpcNode());
    for (const typeUrl of [TypeUrl.Listener, TypeUrl.Route]) {
      s.send({ typeUrl, names: [LISTENER] });
      s.ack(await s.next(), [LISTENER]);
    }
    await eventually('two ACKs', () => acked.length === 2, { timeoutMs: 3000 });
    const before = harness.tm.model.current().push.version;
    expect(acked.map((a) => a.version)).toEqual([before, before]);

    acked.length = 0;
    await harness.change(echoRoute('7s'), { origin: 'test.yaml' });
    const after = harness.tm.model.current().push.version;
    expect(after).not.toBe(before);
    // LDS had nothing new: the proxy holds the new snapshot's listener already
    expect(acked).toEqual([{ proxy: grpcNode().id, typeUrl: TypeUrl.Listener, version: after }]);
    const rds = await s.next();
    expect(rds.typeUrl).toBe(TypeUrl.Route);
    s.ack(rds, [LISTENER]);
    await eventually('the RDS ACK', () => acked.length === 2, { timeoutMs: 3000 });
    expect(acked[1]).toEqual({ proxy: grpcNode().id, typeUrl: TypeUrl.Route, version: after });
  });

  it('after a change, reports the new version at once for a type the change cannot reach', async () => {
    const acked: Acked[] = [];
    const harness = await start(echoRoute('1s'), acked, []);
    const s = harness.sotw(grpcNode());
    const cluster = `outbound|7070||${ECHO}`;
    for (const [typeUrl, names] of [[TypeUrl.Listener, [LISTENER]], [TypeUrl.Route, [LISTENER]], [TypeUrl.Cluster, [cluster]]] as const) {
      s.send({ typeUrl, names: [...names] });
      const res = await s.next();
      expect(res.resources).toHaveLength(1);
      s.ack(res, [...names]);
    }
    await eventually('three ACKs', () => acked.length === 3, { timeoutMs: 3000 });

    acked.length = 0;
    // a VirtualService edit reaches listeners and routes only: clusters are not regenerated, and
    // the proxy holds the new snapshot's clusters already (else it would never count as up to date)
    await harness.change(echoRoute('7s'), { origin: 'test.yaml' });
    const after = harness.tm.model.current().push.version;
    expect(acked).toEqual(
      expect.arrayContaining([
        { proxy: grpcNode().id, typeUrl: TypeUrl.Cluster, version: after },
        { proxy: grpcNode().id, typeUrl: TypeUrl.Listener, version: after },
      ]),
    );
    expect(acked.map((a) => a.typeUrl)).not.toContain(TypeUrl.Route); // sent, not yet ACKed
  });

  it('keeps the stream working when the observer throws', async () => {
    h = await startAds(echoRoute('1s'), {
      observer: {
        acked: () => {
          throw new Error('observer broken');
        },
      },
    });
    const s = h.sotw(grpcNode());
    s.send({ typeUrl: TypeUrl.Listener, names: [LISTENER] });
    s.ack(await s.next(), [LISTENER]);
    s.send({ typeUrl: TypeUrl.Route, names: [LISTENER] });
    const rds = await s.next();
    expect(rds.resources).toHaveLength(1);
  });
});
