/**
 * The daemon as the package and the image run it: the bundle `dist/bin/mesh-discovery.js`
 * (scripts/bundle.mjs, docs/adr/0194), started on the Mock registry with the CA in a directory. It
 * gets ready (its secured port's certificate signed by the crypto pool's worker, itself a bundled
 * entry), and the caller and stack of its log lines name the sources (`src/<file>.ts:<line>`,
 * through the source maps beside the bundle), not the bundle's chunks. Two seconds after ready,
 * with no proxy connected, it gives start-up's memory back (ADR 0194): its resident size drops; and
 * it has started no crypto worker thread (its own serving certificate is signed on the main thread).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { makeConfigDir, REPO_ROOT, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';

let config: ConfigDir | undefined;
let daemon: Daemon | undefined;

afterAll(async () => {
  await daemon?.stop();
  await config?.cleanup();
});

describe('the bundled daemon', () => {
  it('gets ready and logs callers and stacks in source terms', async () => {
    config = await makeConfigDir();
    daemon = await startDaemon({
      entry: join(REPO_ROOT, 'dist', 'bin', 'mesh-discovery.js'),
      configDir: config.path,
      env: { ENABLE_CA_SERVER: 'true' },
      args: ['--secureGRPCAddr', '127.0.0.1:0', '--log_as_json', '--log_caller', 'default', '--log_stacktrace_level', 'default:info', '--log_output_level', 'default:debug'],
    });
    expect(await daemon.ready()).toBe(true);
    const lines = daemon
      .logs()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; scope?: string; caller?: string; stack?: string; secureGrpc?: number });
    const ready = lines.find((l) => l.msg === 'mesh-discovery ready');
    expect(ready?.secureGrpc).toBeGreaterThan(0);
    expect(ready?.caller).toMatch(/^src\/bootstrap\/daemon\.ts:\d+$/);
    expect(ready?.stack?.split('\n')[0]).toMatch(/src\/bootstrap\/daemon\.ts:\d+:\d+\)?$/);
    const defaults = lines.filter((l) => l.scope === 'default');
    expect(defaults.length).toBeGreaterThan(0);
    expect(defaults.filter((l) => !/^src\/.+\.ts:\d+$/.test(l.caller ?? ''))).toEqual([]);
    expect(daemon.logs()).not.toMatch(/chunk-\w+\.js/);
  }, 60_000);

  it('gives start-up memory back once ready and idle', async () => {
    const running = daemon as Daemon;
    const released = await eventually(
      'the start-up memory release',
      () => running.logs().split('\n').find((l) => l.includes('"start-up memory released"')),
      { diagnostics: () => running.logs().slice(-2000) },
    );
    const { rssBeforeMB, rssAfterMB } = JSON.parse(released) as { rssBeforeMB: number; rssAfterMB: number };
    expect(rssAfterMB).toBeLessThan(rssBeforeMB);
    // Node names its threads; a worker_threads Worker runs as `WorkerThread`.
    const threads = readdirSync(`/proc/${running.pid}/task`).map((t) => readFileSync(`/proc/${running.pid}/task/${t}/comm`, 'utf8').trim());
    expect(threads).toContain('MainThread');
    expect(threads).not.toContain('WorkerThread');
  }, 30_000);
});
