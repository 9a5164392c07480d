/**
 * Every metric of the daemon spec's table is exported, and the ones added for the config runtime
 * processor, the conflict gauges and the scrape counters move when the thing they count happens on a
 * running daemon fed from a config directory (docs/adr/0175).
 */
import { jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeConfigDir, REPO_ROOT, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { SotwStream } from '../support/ads-client.js';
import { TypeUrl } from '../../src/xds/types.js';

jest.setTimeout(90_000);

/** Metric names of the "Exported metrics" table of docs/spec/daemon-mesh-discovery.md. */
function specMetricNames(): string[] {
  const text = readFileSync(join(REPO_ROOT, 'docs', 'spec', 'daemon-mesh-discovery.md'), 'utf8');
  const section = text.slice(text.indexOf('### Exported metrics'), text.indexOf('## States and transitions'));
  return [...section.matchAll(/^\| ([a-z_]+) \| (?:Sum|Count|LastValue|Distribution) \|/gm)].map((m) => m[1]);
}

/** Names the exposition declares (`# TYPE name ...`), samples or not. */
function exportedNames(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
}

/** Spec metrics not exported yet, each with the reason (kept short on purpose: this list should shrink). */
const NOT_YET: Readonly<Record<string, string>> = {};

const vs = (name: string, host: string): object => ({
  apiVersion: 'networking.mesh.io/v1',
  kind: 'VirtualService',
  metadata: { name, namespace: 'default' },
  spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
});
const dr = (name: string, host: string, subsets: string[]): object => ({
  apiVersion: 'networking.mesh.io/v1',
  kind: 'DestinationRule',
  metadata: { name, namespace: 'default' },
  spec: { host, subsets: subsets.map((s) => ({ name: s, labels: { version: s } })) },
});

/** A ServiceEntry without addresses (its listeners sit on 0.0.0.0) with one port and static endpoints. */
const se = (name: string, port: number, protocol: string, endpoints: string[] = ['10.8.0.1']): object => ({
  apiVersion: 'networking.mesh.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace: 'default' },
  spec: { hosts: [`${name}.example.com`], location: 'MESH_INTERNAL', resolution: 'STATIC', ports: [{ number: port, name: `p-${protocol.toLowerCase()}`, protocol }], endpoints: endpoints.map((address) => ({ address })) },
});

describe('daemon metrics of the spec', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;

  beforeAll(async () => {
    dir = await makeConfigDir();
    d = await startDaemon({ configDir: dir.path, env: { DISC_DEBOUNCE_AFTER: '300ms', DISC_DEBOUNCE_MAX: '700ms' } });
  });

  afterAll(async () => {
    await d?.stop();
    await dir?.cleanup();
  });

  it('exports every metric the spec table names', async () => {
    const names = specMetricNames();
    expect(names.length).toBeGreaterThan(80);
    const exported = exportedNames(await d.metrics());
    const missing = names.filter((n) => !exported.has(n) && !(n in NOT_YET));
    expect(missing).toEqual([]);
    // an entry of NOT_YET that is exported by now must leave the list
    expect(Object.keys(NOT_YET).filter((n) => exported.has(n))).toEqual([]);
  });

  it('counts scrapes of /metrics', async () => {
    const before = await d.metric('scrapes_total');
    await d.metrics();
    expect(await d.metric('scrapes_total')).toBeGreaterThanOrEqual(before + 2);
    expect(await d.metric('scrape_failures_total')).toBe(0);
  });

  it('a config edit is an event, a quiesced timer and a published snapshot; duplicates are counted', async () => {
    const events = await d.metric('cfg_runtime_processor_events_processed_total');
    const changes = await d.metric('cfg_runtime_strategy_on_change_total');
    const published = await d.metric('cfg_runtime_processor_snapshots_published_total');
    const quiesced = await d.metric('cfg_runtime_strategy_timer_quiesce_reached_total');
    expect(await d.metric('disc_vservice_dup_domain')).toBe(0);
    expect(await d.metric('disc_destrule_subsets')).toBe(0);

    // one file is one change of the store (docs/adr/0163): two files of two objects, two requests to the strategy
    await dir.write('routes.yaml', [vs('a', 'reviews.default.svc.cluster.local'), vs('b', 'reviews')]);
    await dir.write('rules.yaml', [dr('r1', 'reviews', ['v1', 'v2']), dr('r2', 'reviews.default.svc.cluster.local', ['v2', 'v3'])]);
    await eventually('both files in a published snapshot', async () => (await d.metric('cfg_runtime_state_type_instances_total', { type_url: 'networking.mesh.io/v1/DestinationRule' })) === 2, { timeoutMs: 10_000 });
    expect(await d.metric('cfg_runtime_processor_snapshots_published_total')).toBeGreaterThan(published);
    expect(await d.metric('cfg_runtime_processor_events_processed_total')).toBeGreaterThanOrEqual(events + 4);
    expect(await d.metric('cfg_runtime_strategy_on_change_total')).toBeGreaterThanOrEqual(changes + 2);
    expect(await d.metric('cfg_runtime_strategy_timer_quiesce_reached_total')).toBeGreaterThan(quiesced);
    expect(await d.metric('cfg_runtime_processor_snapshot_events_total_count')).toBeGreaterThanOrEqual(1);
    expect(await d.metric('cfg_runtime_processor_snapshot_events_total_sum')).toBeGreaterThanOrEqual(1);
    expect(await d.metric('cfg_runtime_processor_snapshot_lifetime_duration_milliseconds_count')).toBeGreaterThanOrEqual(1);
    expect(await d.metric('cfg_runtime_processor_event_span_duration_milliseconds_count')).toBeGreaterThanOrEqual(1);
    expect(await d.metric('cfg_runtime_state_type_instances_total', { type_url: 'networking.mesh.io/v1/VirtualService' })).toBe(2);
    expect(await d.metric('cfg_runtime_state_type_instances_total', { type_url: 'networking.mesh.io/v1/DestinationRule' })).toBe(2);
    // b claims the host a (older) claims; r2 defines v2 again for the host of r1
    expect(await d.metric('disc_vservice_dup_domain')).toBe(1);
    expect(await d.metric('disc_destrule_subsets')).toBe(1);

    await dir.remove('routes.yaml');
    await dir.remove('rules.yaml');
    await eventually('the duplicates to go', async () => (await d.metric('disc_vservice_dup_domain')) === 0 && (await d.metric('disc_destrule_subsets')) === 0, { timeoutMs: 10_000 });
    expect(await d.metric('cfg_runtime_state_type_instances_total', { type_url: 'networking.mesh.io/v1/VirtualService' })).toBe(0);
  });

  it('listener conflicts the generators resolve are counted for the connected sidecar, and go with it', async () => {
    await dir.write('conflicts.yaml', [
      // two TCP services on 0.0.0.0:9000: the second is dropped from the listener
      se('tcp-a', 9000, 'TCP'),
      se('tcp-b', 9000, 'TCP'),
      // HTTP and TCP on the wildcard port 9100: the HTTP listener takes the port
      se('web-c', 9100, 'HTTP'),
      se('tcp-d', 9100, 'TCP'),
      // the sidecar's own address serves port 7000 as HTTP for one service and TCP for another
      se('in-e', 7000, 'HTTP', ['10.9.0.1']),
      se('in-f', 7000, 'TCP', ['10.9.0.1']),
    ]);
    await eventually('the services to be known', async () => (await d.metric('cfg_runtime_state_type_instances_total', { type_url: 'networking.mesh.io/v1/ServiceEntry' })) === 6, { timeoutMs: 10_000 });
    const s = new SotwStream(d.grpcAddr, { id: 'sidecar~10.9.0.1~app-0.default~default.svc.cluster.local', metadata: { NAMESPACE: 'default' } });
    try {
      s.send({ typeUrl: TypeUrl.Listener });
      await s.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 10_000);
      await eventually('the conflicts to be counted', async () => (await d.metric('disc_conflict_outbound_listener_tcp_over_current_tcp')) === 1, { timeoutMs: 10_000 });
      expect(await d.metric('disc_conflict_inbound_listener')).toBe(1);
      const wildcard = (await d.metric('disc_conflict_outbound_listener_http_over_current_tcp')) + (await d.metric('disc_conflict_outbound_listener_tcp_over_current_http'));
      // ports 9100 and 7000 (in-e and in-f have no address either)
      expect(wildcard).toBe(2);
    } finally {
      s.close();
    }
    await eventually('the conflicts to leave with the proxy', async () => (await d.metric('disc_conflict_outbound_listener_tcp_over_current_tcp')) === 0 && (await d.metric('disc_conflict_inbound_listener')) === 0, { timeoutMs: 10_000 });
    await dir.remove('conflicts.yaml');
  });

  it('events that never pause for DISC_DEBOUNCE_MAX fire on the max-time timer', async () => {
    const maxed = await d.metric('cfg_runtime_strategy_timer_max_time_reached_total');
    // an edit every 100 ms for 2 s: the 300 ms quiet period never comes, the 700 ms maximum does
    for (let i = 0; i < 20; i++) {
      await dir.write('churn.yaml', vs('churn', `churn-${i}.example.com`));
      await new Promise((r) => setTimeout(r, 100));
    }
    await eventually('the max time to be reached', async () => (await d.metric('cfg_runtime_strategy_timer_max_time_reached_total')) >= maxed + 2, { timeoutMs: 10_000 });
  });
});
