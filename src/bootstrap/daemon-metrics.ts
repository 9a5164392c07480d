/**
 * Every metric the daemon can export, on its one registry: the daemon's own (src/metrics/metrics.ts)
 * and the CA's ca_server_* (src/ca/metrics.ts), registered together at start whether or not the CA
 * runs, so that `/metrics` and the generated reference (src/cli/reference.ts) list the same names.
 * A new set of metrics joins here.
 */
import { createCaMetrics, type CaMetrics } from '../ca/metrics.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';

export interface DaemonMetrics {
  readonly metrics: Metrics;
  readonly ca: CaMetrics;
}

export function createDaemonMetrics(opts: { readonly defaultMetrics?: boolean } = {}): DaemonMetrics {
  const metrics = createMetrics(opts);
  return { metrics, ca: createCaMetrics(metrics.registry) };
}
