/**
 * ControlZ of a running meshd (a process, `--ctrlz_port` of its own, `--profile`):
 * - in a real headless Chromium: the page renders its sections from the JSON API, keeps itself up
 *   to date, and a scope's level changed from its menu takes effect in the daemon;
 * - the JSON API: scopes (set, reset, bad input), memory, event loop, process, environment with
 *   secrets redacted, arguments, metrics; changes refused without JSON or from another origin;
 * - `--profile`: a CPU profile and a heap snapshot over HTTP, bad `seconds` refused; without
 *   `--profile` there is no /debug/pprof.
 */
import { request } from 'node:http';
import { startDaemon, type Daemon } from '../test/support/daemon.js';
import type { Page } from 'playwright-core';
import { browserSkipReason, launchChromium, type TestBrowser } from '../test/support/browser.js';
import { eventually } from '../test/support/eventually.js';

let daemon: Daemon;
let plain: Daemon;

interface Reply {
  status: number;
  type: string;
  body: string;
}

function call(addr: string, path: string, method = 'GET', body?: string, headers: Record<string, string> = {}): Promise<Reply> {
  const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, method, headers: body !== undefined ? { 'content-type': 'application/json', ...headers } : headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const json = <T>(r: Reply): T => JSON.parse(r.body) as T;
type Scopes = { scopes: Array<{ name: string; outputLevel: string; stackTraceLevel: string }> };
const levelOf = async (scope: string): Promise<string> => json<Scopes>(await call(daemon.ctrlzAddr, '/scopej')).scopes.find((s) => s.name === scope)!.outputLevel;

beforeAll(async () => {
  [daemon, plain] = await Promise.all([startDaemon({ args: ['--profile'], env: { MESH_TEST_TOKEN: 'hunter2' } }), startDaemon()]);
}, 60_000);

afterAll(async () => {
  await Promise.all([daemon?.stop(), plain?.stop()]);
});

/** The little of the page's DOM the conditions below read (they run in the page, not here). */
declare const document: { querySelector(selector: string): { textContent: string | null } | null; querySelectorAll(selector: string): { length: number } };

/**
 * Waits until `fn`, run in the page, returns true. The page's Content-Security-Policy forbids eval,
 * so conditions go in as functions (run over the DevTools protocol), never as strings.
 */
async function pageShows(page: Page, what: string, fn: () => boolean): Promise<void> {
  await eventually(what, async () => ((await page.evaluate(fn)) ? true : undefined), { timeoutMs: 15_000, intervalMs: 100 });
}

const skipBrowser = browserSkipReason();
if (skipBrowser) console.log(`controlz: the browser test is SKIPPED: ${skipBrowser}`);
const browserIt = (title: string, fn: () => Promise<void>, timeout: number): void =>
  skipBrowser ? it.skip(`${title} (skipped: ${skipBrowser})`, fn) : it(title, fn, timeout);

describe('the ControlZ page in Chromium', () => {
  let browser: TestBrowser;
  beforeAll(async () => {
    if (!skipBrowser) browser = await launchChromium();
  }, 60_000);
  afterAll(async () => browser?.close());

  browserIt('renders the process, keeps it live, and changes a scope level from its menu', async () => {
    const page = await browser.context.newPage();
    const external: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(`http://${daemon.ctrlzAddr}/`)) external.push(r.url());
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`http://${daemon.ctrlzAddr}/`);
    await pageShows(page, 'the page to go live', () => document.querySelector('#status')?.textContent?.startsWith('live') === true);
    expect(await page.textContent('h1')).toBe('ControlZ');
    expect(await page.textContent('#ident')).toMatch(/^meshd \S+ · pid \d+ · /);
    const uptime = async () => page.locator('#proc .fig').first().textContent();
    const first = await uptime();
    await eventually('the uptime to move on', async () => ((await uptime()) !== first ? true : undefined), { timeoutMs: 6000 });

    await page.click('nav button[data-tab=logging]');
    const menu = page.locator('select[data-scope="ads"][data-kind="output"]');
    await menu.waitFor();
    expect(await menu.inputValue()).toBe('info');
    await menu.selectOption('debug');
    await pageShows(page, 'the page to confirm the change', () => document.querySelector('#status')?.textContent === 'scope ads set to debug');
    expect(await levelOf('ads')).toBe('debug');
    // the page shows the daemon's state when it changes elsewhere too
    await call(daemon.ctrlzAddr, '/scopej', 'POST', JSON.stringify({ scope: 'ads', outputLevel: 'warn' }));
    await eventually('the page to show warn', async () => ((await menu.inputValue()) === 'warn' ? true : undefined), { timeoutMs: 6000 });

    await page.click('nav button[data-tab=memory]');
    await pageShows(page, 'the memory and event-loop figures', () => document.querySelectorAll('#mem .fig').length === 6 && document.querySelectorAll('#loop .fig').length === 4);
    await page.click('nav button[data-tab=env]');
    await pageShows(page, 'the environment', () => document.querySelector('#envs')?.textContent?.includes('MESH_TEST_TOKEN') === true);
    expect(await page.textContent('#envs')).not.toContain('hunter2');
    await page.click('nav button[data-tab=metrics]');
    await page.fill('#metricFilter', 'mesh_build');
    await pageShows(page, 'the filtered metrics', () => (document.querySelector('#metricText')?.textContent ?? '').includes('mesh_build{'));
    expect(errors).toEqual([]);
    expect(external).toEqual([]);
    await page.close();
  }, 60_000);
});

describe('the ControlZ JSON API', () => {
  it('lists scopes and changes one, then resets them all', async () => {
    expect(json<Scopes & { levels: string[] }>(await call(daemon.ctrlzAddr, '/scopej')).levels).toEqual(['debug', 'info', 'warn', 'error', 'fatal', 'none']);
    const set = await call(daemon.ctrlzAddr, '/scopej', 'POST', JSON.stringify({ scope: 'model', outputLevel: 'error', stackTraceLevel: 'error' }));
    expect(set.status).toBe(200);
    expect(json<Scopes>(set).scopes.find((s) => s.name === 'model')).toEqual({ name: 'model', outputLevel: 'error', stackTraceLevel: 'error' });
    const reset = await call(daemon.ctrlzAddr, '/scopej/reset', 'POST', '{}');
    expect(json<Scopes>(reset).scopes.every((s) => s.outputLevel === 'info' && s.stackTraceLevel === 'none')).toBe(true);
  });

  it.each([
    [{ scope: 'nope', outputLevel: 'info' }, /unknown log scope "nope"/],
    [{ scope: 'ads', outputLevel: 'loud' }, /unknown log level "loud"/],
    [{ scope: 'ads' }, /give outputLevel, stackTraceLevel or both/],
    [{ outputLevel: 'info' }, /scope: a scope name is required/],
  ])('refuses %j with 400 and a reason', async (body, message) => {
    const r = await call(daemon.ctrlzAddr, '/scopej', 'POST', JSON.stringify(body));
    expect(r.status).toBe(400);
    expect(json<{ error: string }>(r).error).toMatch(message);
  });

  it('refuses changes that are not JSON or come from another origin', async () => {
    const form = await call(daemon.ctrlzAddr, '/scopej', 'POST', 'scope=ads&outputLevel=debug', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(403);
    const other = await call(daemon.ctrlzAddr, '/scopej/reset', 'POST', '{}', { origin: 'http://evil.example' });
    expect(other.status).toBe(403);
    const rebound = await call(daemon.ctrlzAddr, '/scopej', 'GET', undefined, { host: 'evil.example' });
    expect(rebound.status).toBe(403);
    const signal = await call(daemon.ctrlzAddr, '/signalj', 'POST', JSON.stringify({ signal: 'SIGKILL' }));
    expect(signal.status).toBe(400);
  });

  it('reports memory, event loop, process, arguments and metrics', async () => {
    const mem = json<{ heapUsed: number; rss: number }>(await call(daemon.ctrlzAddr, '/memj'));
    expect(mem.heapUsed).toBeGreaterThan(1e6);
    const loop = json<{ utilization: number; delayMs: { p99: number } }>(await call(daemon.ctrlzAddr, '/loopj'));
    expect(loop.utilization).toBeGreaterThanOrEqual(0);
    expect(json<{ pid: number; profiling: boolean }>(await call(daemon.ctrlzAddr, '/procj'))).toMatchObject({ pid: daemon.pid, profiling: true });
    expect(json<string[]>(await call(daemon.ctrlzAddr, '/argj'))).toContain('--profile');
    expect((await call(daemon.ctrlzAddr, '/metricj')).body).toMatch(/^# HELP /m);
  });
});

describe('--profile', () => {
  it('takes a CPU profile and a heap snapshot over HTTP', async () => {
    const cpu = await call(daemon.ctrlzAddr, '/debug/pprof/profile?seconds=1');
    expect(cpu.status).toBe(200);
    const profile = json<{ nodes: unknown[]; startTime: number; endTime: number }>(cpu);
    expect(profile.nodes.length).toBeGreaterThan(0);
    expect(profile.endTime - profile.startTime).toBeGreaterThanOrEqual(900_000);
    const heap = await call(daemon.ctrlzAddr, '/debug/pprof/heap');
    expect(heap.status).toBe(200);
    expect(json<{ snapshot: { node_count: number } }>(heap).snapshot.node_count).toBeGreaterThan(1000);
  }, 30_000);

  it('refuses a bad duration, and is absent without --profile', async () => {
    const bad = await call(daemon.ctrlzAddr, '/debug/pprof/profile?seconds=0');
    expect(bad.status).toBe(400);
    expect(json<{ error: string }>(bad).error).toMatch(/seconds: expected a number of seconds/);
    expect((await call(plain.ctrlzAddr, '/debug/pprof/heap')).status).toBe(404);
    expect((await call(plain.ctrlzAddr, '/procj')).status).toBe(200);
  });
});
