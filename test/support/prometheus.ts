/**
 * A real Prometheus server (Debian's `prometheus` package, /usr/bin/prometheus, or
 * MESH_TEST_PROMETHEUS) scraping targets the test serves, for tests of what meshctl reads from a
 * metrics store. `prometheusSkipReason()` decides what such a test does where none is installed:
 * skip with a line saying why when .ci/run could not install it (MESH_TEST_PROMETHEUS_UNAVAILABLE),
 * fail under CI otherwise; a test against the store never passes by not running.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from './eventually.js';

export const PROMETHEUS = process.env.MESH_TEST_PROMETHEUS ?? '/usr/bin/prometheus';
/** Its TSDB tool (same package), for history written before the server starts. */
export const PROMTOOL = path.join(path.dirname(PROMETHEUS), 'promtool');

export function prometheusSkipReason(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (fs.existsSync(PROMETHEUS) && fs.existsSync(PROMTOOL)) return undefined;
  const reason = env.MESH_TEST_PROMETHEUS_UNAVAILABLE;
  if (reason) return `no Prometheus at ${PROMETHEUS}: ${reason}`;
  if (env.CI && env.CI !== 'false') {
    throw new Error(`no Prometheus at ${PROMETHEUS} under CI: .ci/run installs it (apt-get install -y prometheus), or sets MESH_TEST_PROMETHEUS_UNAVAILABLE when it cannot`);
  }
  return `no Prometheus at ${PROMETHEUS} (apt-get install -y --no-install-recommends prometheus, or MESH_TEST_PROMETHEUS=<path>)`;
}

export interface TestPrometheus {
  readonly port: number;
  /** Its log so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
    probe.once('error', reject);
  });
}

export interface PrometheusOptions {
  /**
   * History to store before the server starts, as OpenMetrics text with timestamps (ending in
   * `# EOF`), written into its TSDB by `promtool tsdb create-blocks-from openmetrics`: a query over
   * the last minute then sees a full minute without the test waiting one.
   */
  readonly backfill?: string;
}

/** Starts Prometheus scraping `targets` (`host:port`) every second; resolves once it is ready. */
export async function startPrometheus(targets: readonly string[], options: PrometheusOptions = {}): Promise<TestPrometheus> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prometheus-'));
  if (options.backfill !== undefined) {
    const input = path.join(dir, 'backfill.om');
    fs.writeFileSync(input, options.backfill);
    await promisify(execFile)(PROMTOOL, ['tsdb', 'create-blocks-from', 'openmetrics', input, path.join(dir, 'data')], { timeout: 60_000 });
  }
  const config = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(
    config,
    JSON.stringify({ global: { scrape_interval: '1s', evaluation_interval: '1s' }, scrape_configs: [{ job_name: 'mesh', static_configs: [{ targets }] }] }),
  );
  const port = await freePort();
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  child.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      'Prometheus to be ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}`);
        const res = await fetch(`http://127.0.0.1:${port}/-/ready`);
        return res.status === 200;
      },
      { timeoutMs: 60_000, intervalMs: 200, retryErrors: true, diagnostics: () => log },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, log: () => log, stop };
}
