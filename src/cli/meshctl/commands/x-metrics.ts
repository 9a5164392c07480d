/**
 * `meshctl x metrics` (alias `m`, spec part 1) `<workload name>...`: per workload `<name>[.<namespace>]`
 * (namespace: -n, else default), requests per second, 5xx errors per second and latency at p50, p90,
 * p99 over a 1-minute interval, from the metrics store (Prometheus) in the mesh namespace reached by
 * a port-forward through the API server. The work is in ../diag/run-metrics.ts.
 */
import type { Command } from 'commander';
import { renderTable } from '../../output.js';
import { CliError, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor, withKubeClient } from '../kube.js';
import type { WorkloadMetrics } from '../diag/run-metrics.js';

const fixed = (n: number | undefined, digits: number, unit = ''): string => (n === undefined ? '-' : `${n.toFixed(digits)}${unit}`);

/** The table `x metrics` prints. */
export function metricsTable(rows: readonly WorkloadMetrics[]): string {
  return renderTable(
    ['WORKLOAD', 'TOTAL RPS', 'ERROR RPS', 'ERROR %', 'P50 LATENCY', 'P90 LATENCY', 'P99 LATENCY'],
    rows.map((r) => [
      `${r.workload.name}.${r.workload.namespace}`,
      fixed(r.totalRps, 3),
      fixed(r.errorRps, 3),
      r.totalRps > 0 ? fixed((100 * r.errorRps) / r.totalRps, 2, '%') : '-',
      fixed(r.p50Ms, 0, 'ms'),
      fixed(r.p90Ms, 0, 'ms'),
      fixed(r.p99Ms, 0, 'ms'),
    ]),
  );
}

export function register(parent: Command, cli: Cli): Command {
  return parent
    .command('metrics')
    .alias('m')
    .description('Prints request rate, error rate and p50/p90/p99 latency of workloads over the last minute, from the metrics store in the mesh namespace.')
    .argument('<workload...>', 'Workloads, as <name>[.<namespace>].')
    .action(
      cli.action(async (names: string[], _o: unknown, self: Command) => {
        const globals = globalOptions(self);
        const { parseWorkload, workloadMetrics } = await import('../diag/run-metrics.js');
        const workloads = names.map((n) => parseWorkload(n, globals.namespace || 'default'));
        const { addon, findAddonPod } = await import('../diag/addons.js');
        const { forwardPort } = await import('../diag/port-forward.js');
        const store = addon('metrics');
        return withKubeClient(
          () => kubeClientFor(globals, cli.io.env),
          async (kube) => {
            const pod = await findAddonPod(kube, store, globals.meshNamespace);
            const forward = await forwardPort(kube, pod, store.port, '127.0.0.1');
            try {
              const rows = await workloadMetrics({ host: '127.0.0.1', port: forward.port }, workloads).catch((err: unknown) => {
                if (err instanceof CliError) throw new CliError(`${err.message} (pod ${pod.namespace}/${pod.name}, port ${store.port}, through the API server)`);
                throw err;
              });
              return { stdout: metricsTable(rows) };
            } finally {
              await forward.close();
            }
          },
        );
      }),
    );
}
