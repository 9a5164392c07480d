/**
 * `x metrics` against a real Prometheus (Debian's package) that scrapes a target this test serves:
 * the standard request metrics of one workload grow at known rates (10 requests/s, 2 of them 5xx;
 * latencies 5 of 10 under 10 ms, 9 under 50 ms, all under 100 ms), and the figures meshctl reads back
 * are those rates and the percentiles they imply. Also: a workload without traffic, a query the
 * store refuses, a store that is not there, and an answer that is not the store's JSON. The store
 * starts with two minutes of that traffic already in its database (promtool), so the test does not
 * wait a minute for the interval to fill.
 */
import http from 'node:http';
import net from 'node:net';
import { CliError } from '../../src/cli/runner.js';
import { metricsTable } from '../../src/cli/meshctl/commands/x-metrics.js';
import { instantQuery, parseQueryReply, parseWorkload, workloadMetrics, workloadQueries } from '../../src/cli/meshctl/diag/run-metrics.js';
import { eventually } from '../support/eventually.js';
import { prometheusSkipReason, startPrometheus, type TestPrometheus } from '../support/prometheus.js';

const skip = prometheusSkipReason();
if (skip) console.log(`skipping the Prometheus tests: ${skip}`);
const describeStore = skip ? describe.skip : describe;

const SEL = 'reporter="destination",destination_workload="reviews-v1",destination_workload_namespace="shop"';

/** The target's series after `s` seconds of traffic at the rates above: [name{labels}, value]. */
function series(s: number): Array<[string, number]> {
  return [
    [`mesh_requests_total{${SEL},response_code="200"}`, 8 * s],
    [`mesh_requests_total{${SEL},response_code="503"}`, 2 * s],
    // The client side's reports of the same calls: the spec's figures are server-side only.
    [`mesh_requests_total{reporter="source",destination_workload="reviews-v1",destination_workload_namespace="shop",response_code="200"}`, 100 * s],
    [`mesh_request_duration_milliseconds_bucket{${SEL},le="10"}`, 5 * s],
    [`mesh_request_duration_milliseconds_bucket{${SEL},le="50"}`, 9 * s],
    [`mesh_request_duration_milliseconds_bucket{${SEL},le="100"}`, 10 * s],
    [`mesh_request_duration_milliseconds_bucket{${SEL},le="+Inf"}`, 10 * s],
    [`mesh_request_duration_milliseconds_sum{${SEL}}`, 200 * s],
    [`mesh_request_duration_milliseconds_count{${SEL}}`, 10 * s],
  ];
}

/**
 * The two minutes before `now` (one sample a second per series, grouped by series as OpenMetrics
 * wants), for the store's history; the target's scrapes carry on from there.
 */
function history(t0: number, now: number, instance: string): string {
  const lines: string[] = [];
  const times: number[] = [];
  for (let t = now - 120_000; t < now - 2_000; t += 1000) times.push(t);
  series(0).forEach((_, i) => {
    for (const t of times) {
      const [name, value] = series((t - t0) / 1000)[i];
      // The labels the store adds to what it scrapes, so that history and scrapes are one series.
      lines.push(`${name.replace('{', `{job="mesh",instance="${instance}",`)} ${value} ${(t / 1000).toFixed(3)}`);
    }
  });
  return `${lines.join('\n')}\n# EOF\n`;
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
}

describeStore('x metrics against a real Prometheus', () => {
  let target: http.Server;
  let prom: TestPrometheus;
  // The traffic began before the store's history does.
  const t0 = Date.now() - 300_000;

  beforeAll(async () => {
    target = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/plain; version=0.0.4');
      res.end(`${series((Date.now() - t0) / 1000)
        .map(([name, value]) => `${name} ${value}`)
        .join('\n')}\n`);
    });
    const port = await listen(target);
    prom = await startPrometheus([`127.0.0.1:${port}`], { backfill: history(t0, Date.now(), `127.0.0.1:${port}`) });
  }, 90_000);

  afterAll(async () => {
    await prom?.stop();
    await new Promise((resolve) => target?.close(resolve));
  });

  it('reads the rates and percentiles of a workload, and nothing for one without traffic', async () => {
    const store = { host: '127.0.0.1', port: prom.port };
    const reviews = parseWorkload('reviews-v1.shop', 'default');
    const idle = parseWorkload('ratings', 'shop');
    // The history fills the minute; the live scrapes carry it on.
    const [row, quiet] = await eventually(
      'the figures of the workload',
      async () => {
        if ((await instantQuery(store, 'up{job="mesh"}')) !== 1) return undefined; // not scraped live yet
        const rows = await workloadMetrics(store, [reviews, idle]);
        return rows[0].totalRps > 0 && rows[0].p99Ms !== undefined ? rows : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, diagnostics: () => prom.log() },
    );
    expect(row.workload).toEqual({ name: 'reviews-v1', namespace: 'shop' });
    expect(row.totalRps).toBeGreaterThan(9.5);
    expect(row.totalRps).toBeLessThan(10.5);
    expect(row.errorRps / row.totalRps).toBeCloseTo(0.2, 2);
    expect(row.p50Ms).toBeCloseTo(10, 1);
    expect(row.p90Ms).toBeCloseTo(50, 1);
    expect(row.p99Ms).toBeCloseTo(95, 1);
    expect(quiet).toEqual({ workload: { name: 'ratings', namespace: 'shop' }, totalRps: 0, errorRps: 0, p50Ms: undefined, p90Ms: undefined, p99Ms: undefined });

    const table = metricsTable([row, quiet]).split('\n');
    expect(table[0]).toMatch(/^WORKLOAD\s+TOTAL RPS\s+ERROR RPS\s+ERROR %\s+P50 LATENCY\s+P90 LATENCY\s+P99 LATENCY$/);
    expect(table[1]).toMatch(/^reviews-v1\.shop\s+(9\.[5-9]|10\.[0-4])\d*\s+\S+\s+20\.00%\s+10ms\s+50ms\s+95ms$/);
    expect(table[2]).toMatch(/^ratings\.shop\s+0\.000\s+0\.000\s+-\s+-\s+-\s+-$/);
  }, 90_000);

  it('a query the store refuses is an error naming its reason', async () => {
    await expect(instantQuery({ host: '127.0.0.1', port: prom.port }, 'sum(rate(mesh_requests_total[1m]')).rejects.toThrow(/the metrics store refused query .*: bad_data: .*parse error/);
  });
});

describe('x metrics: the store and its answers', () => {
  it('builds server-side queries over one minute', () => {
    const q = workloadQueries({ name: 'reviews-v1', namespace: 'shop' });
    expect(q.total).toBe('sum(rate(mesh_requests_total{reporter="destination",destination_workload="reviews-v1",destination_workload_namespace="shop"}[1m]))');
    expect(q.errors).toContain(',response_code=~"5.."}[1m]');
    expect(q.quantile(0.9)).toBe(
      'histogram_quantile(0.9, sum(rate(mesh_request_duration_milliseconds_bucket{reporter="destination",destination_workload="reviews-v1",destination_workload_namespace="shop"}[1m])) by (le))',
    );
  });

  it.each([
    ['Reviews', /"Reviews" is not a valid workload name/],
    ['reviews.Shop_1', /"Shop_1" is not a valid namespace/],
    ['a"b', /is not a valid workload name/],
  ])('workload %s is refused', (arg, message) => {
    expect(() => parseWorkload(arg, 'default')).toThrow(message);
  });

  it('a store that is not there is a clear error', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const err = await workloadMetrics({ host: '127.0.0.1', port }, [{ name: 'a', namespace: 'b' }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as Error).message).toMatch(new RegExp(`cannot reach the metrics store at 127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
  });

  it('an answer that is not the query API is a clear error', async () => {
    const server = http.createServer((_req, res) => res.end('<html>a proxy page</html>'));
    const port = await listen(server);
    try {
      await expect(instantQuery({ host: '127.0.0.1', port }, 'up')).rejects.toThrow(/answered 200 with a body that is not its API's JSON: <html>a proxy page/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(() => parseQueryReply('up', 200, JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [] } }))).toThrow(/with a matrix result, not a vector/);
  });
});
