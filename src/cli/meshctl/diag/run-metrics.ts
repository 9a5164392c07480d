/**
 * `meshctl x metrics <workload>...`: request rate, error rate and latency percentiles of workloads,
 * from the metrics store's (Prometheus) query API, over a 1-minute interval, from the reports of
 * the destination side (spec part 1). The store is the `metrics` addon (./addons.ts) in the mesh
 * namespace, reached by a port-forward through the API server.
 *
 * The standard request metrics (docs/adr/0125):
 *   mesh_requests_total{reporter, destination_workload, destination_workload_namespace, response_code}
 *   mesh_request_duration_milliseconds_bucket{…, le}
 * An error is a response code of class 5xx.
 */
import { CliError } from '../../runner.js';
import { httpRequest } from './port-forward.js';

export const REQUESTS_METRIC = 'mesh_requests_total';
export const DURATION_METRIC = 'mesh_request_duration_milliseconds';
/** The interval of the spec's figures. */
export const METRICS_INTERVAL = '1m';

export interface WorkloadRef {
  readonly name: string;
  readonly namespace: string;
}

/** One workload's figures; a latency is undefined when there were no requests in the interval. */
export interface WorkloadMetrics {
  readonly workload: WorkloadRef;
  readonly totalRps: number;
  readonly errorRps: number;
  readonly p50Ms?: number;
  readonly p90Ms?: number;
  readonly p99Ms?: number;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const WORKLOAD_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** `<name>[.<namespace>]`, the namespace defaulting to `namespace`; a CliError for a malformed one. */
export function parseWorkload(arg: string, namespace: string): WorkloadRef {
  const dot = arg.lastIndexOf('.');
  const name = dot > 0 ? arg.slice(0, dot) : arg;
  const ns = dot > 0 ? arg.slice(dot + 1) : namespace;
  if (!WORKLOAD_NAME.test(name) || name.length > 253) throw new CliError(`workload ${JSON.stringify(arg)}: ${JSON.stringify(name)} is not a valid workload name`);
  if (!DNS_LABEL.test(ns)) throw new CliError(`workload ${JSON.stringify(arg)}: ${JSON.stringify(ns)} is not a valid namespace`);
  return { name, namespace: ns };
}

/** The PromQL queries of one workload (names are checked by parseWorkload, so they need no escaping). */
export function workloadQueries(w: WorkloadRef, interval = METRICS_INTERVAL): { total: string; errors: string; quantile: (q: number) => string } {
  const sel = `reporter="destination",destination_workload="${w.name}",destination_workload_namespace="${w.namespace}"`;
  return {
    total: `sum(rate(${REQUESTS_METRIC}{${sel}}[${interval}]))`,
    errors: `sum(rate(${REQUESTS_METRIC}{${sel},response_code=~"5.."}[${interval}]))`,
    quantile: (q) => `histogram_quantile(${q}, sum(rate(${DURATION_METRIC}_bucket{${sel}}[${interval}])) by (le))`,
  };
}

interface QueryReply {
  readonly status?: string;
  readonly errorType?: string;
  readonly error?: string;
  readonly data?: { readonly resultType?: string; readonly result?: ReadonlyArray<{ readonly value?: readonly [number, string] }> };
}

/**
 * The value of an instant query's answer (`/api/v1/query`): the one sample of a vector, undefined for
 * an empty vector or NaN. A CliError for an error answer or a body that is not the API's JSON.
 */
export function parseQueryReply(query: string, status: number, body: string): number | undefined {
  let reply: QueryReply;
  try {
    reply = JSON.parse(body) as QueryReply;
  } catch {
    throw new CliError(`the metrics store answered ${status} with a body that is not its API's JSON: ${body.slice(0, 200)}`);
  }
  if (reply.status !== 'success') {
    throw new CliError(`the metrics store refused query ${query}: ${reply.errorType ?? `HTTP ${status}`}: ${reply.error ?? 'no reason given'}`);
  }
  if (reply.data?.resultType !== 'vector' || !Array.isArray(reply.data.result)) {
    throw new CliError(`the metrics store answered query ${query} with a ${reply.data?.resultType ?? 'missing'} result, not a vector`);
  }
  const sample = reply.data.result[0]?.value?.[1];
  if (sample === undefined) return undefined;
  const n = Number(sample);
  return Number.isFinite(n) ? n : undefined;
}

export interface MetricsStore {
  /** Where the query API is: `http://127.0.0.1:<port>`. */
  readonly host: string;
  readonly port: number;
  readonly timeoutMs?: number;
}

/** One instant query against the store. */
export async function instantQuery(store: MetricsStore, query: string): Promise<number | undefined> {
  let reply;
  try {
    reply = await httpRequest(store.host, store.port, `/api/v1/query?query=${encodeURIComponent(query)}`, { timeoutMs: store.timeoutMs ?? 30_000 });
  } catch (err) {
    throw new CliError(`cannot reach the metrics store at ${store.host}:${store.port}: ${(err as Error).message}`);
  }
  return parseQueryReply(query, reply.status, reply.body);
}

/** The figures of each workload, in the order given. */
export async function workloadMetrics(store: MetricsStore, workloads: readonly WorkloadRef[]): Promise<WorkloadMetrics[]> {
  const out: WorkloadMetrics[] = [];
  for (const workload of workloads) {
    const q = workloadQueries(workload);
    const [total, errors, p50, p90, p99] = await Promise.all([
      instantQuery(store, q.total),
      instantQuery(store, q.errors),
      instantQuery(store, q.quantile(0.5)),
      instantQuery(store, q.quantile(0.9)),
      instantQuery(store, q.quantile(0.99)),
    ]);
    out.push({ workload, totalRps: total ?? 0, errorRps: errors ?? 0, p50Ms: p50, p90Ms: p90, p99Ms: p99 });
  }
  return out;
}
