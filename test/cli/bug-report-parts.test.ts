/**
 * The parts of `meshctl bug-report` that decide what goes into the archive, without a cluster:
 * --include/--exclude selection as the spec words it, the log time window over timestamped lines,
 * the importance ranking of --critical-errs/--ignore-errs, and the tar writer (read back with the
 * system's tar, long paths included).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { importance, timeWindow, withinWindow } from '../../src/cli/meshctl/bugreport/logs.js';
import { DEFAULT_EXCLUDE, deploymentOf, parseSelection, selected } from '../../src/cli/meshctl/bugreport/select.js';
import { writeTarGz } from '../../src/cli/meshctl/bugreport/tar.js';
import { main as meshctl } from '../../src/cli/meshctl.js';
import { captureIO } from './capture.js';

const pod = (over: Partial<{ namespace: string; name: string; deployment: string; labels: Record<string, string>; annotations: Record<string, string> }> = {}) => ({
  namespace: 'shop',
  name: 'reviews-v1-7c9-abcde',
  deployment: 'reviews-v1',
  labels: { app: 'reviews', version: 'v1' },
  annotations: { team: 'payments-eu' },
  ...over,
});

describe('--include / --exclude', () => {
  const inc = (...s: string[]) => s.map((x) => parseSelection(x, '--include'));
  const exc = (...s: string[]) => s.map((x) => parseSelection(x, '--exclude'));

  it.each([
    ['no include takes everything outside the excluded namespaces', [], DEFAULT_EXCLUDE, pod(), 'mesh-proxy', true],
    ['the default exclude leaves kube-system out', [], DEFAULT_EXCLUDE, pod({ namespace: 'kube-system' }), 'mesh-proxy', false],
    ['ns1//pod1 selects only that namespace and pod', ['shop//reviews-v1-7c9-abcde'], [], pod(), 'app', true],
    ['…and not another pod of it', ['shop//ratings-0'], [], pod(), 'app', false],
    ['alternatives in a part are OR-ed', ['web,shop'], [], pod(), 'app', true],
    ['parts are AND-ed', ['shop/ratings'], [], pod(), 'app', false],
    ['names glob', ['sh*/reviews-*/*-abcde/mesh-*'], [], pod(), 'mesh-proxy', true],
    ['the container part filters containers', ['///mesh-proxy'], [], pod(), 'app', false],
    ['labels match key=value', ['////version=v1'], [], pod(), 'app', true],
    ['label values take a prefix glob', ['////version=v*'], [], pod({ labels: { version: 'v2' } }), 'app', true],
    ['annotations match, with prefix globs', ['/////team=payments-*'], [], pod(), 'app', true],
    ['an exclude wins over an include', ['shop'], ['shop/reviews-v1'], pod(), 'app', false],
  ])('%s', (_what, include, exclude, p, container, want) => {
    expect(selected(inc(...include), exc(...exclude), p, container)).toBe(want);
  });

  it('reads the deployment from the ReplicaSet owner', () => {
    expect(deploymentOf([{ kind: 'ReplicaSet', name: 'reviews-v1-7c9' }])).toBe('reviews-v1');
    expect(deploymentOf([{ kind: 'StatefulSet', name: 'db' }])).toBe('');
  });

  it.each([
    ['a/b/c/d/e/f/g', /has 7 parts/],
    ['////app', /label "app" is not key=value/],
    ['////ap*=x', /label keys cannot use \*/],
  ])('refuses %s', (text, message) => {
    expect(() => parseSelection(text, '--include')).toThrow(message);
  });
});

describe('--include / --exclude on the command line', () => {
  // the values are read before the cluster is asked anything: a malformed one ends the run here
  const run = async (...argv: string[]) => {
    const c = captureIO({ KUBECONFIG: '/nonexistent/kubeconfig', HOME: '/nonexistent' });
    const code = await meshctl(['bug-report', ...argv], c.io);
    return { code, stderr: c.stderr() };
  };

  it('keeps a value whole: the commas of a part are its alternatives, not new specs', async () => {
    const r = await run('--include', 'ns1,ns2/a/b/c/d/e/f', '--dry-run');
    expect(r.stderr).toMatch(/^error: --include: "ns1,ns2\/a\/b\/c\/d\/e\/f" has 7 parts/);
    expect(r.code).toBe(1);
  });

  it('keeps a label list whole, so every pair of it is checked', async () => {
    const r = await run('--exclude', 'shop////app=a,version', '--dry-run');
    expect(r.stderr).toMatch(/^error: --exclude: "shop\/\/\/\/app=a,version": label "version" is not key=value/);
    expect(r.code).toBe(1);
  });

  it('a well-formed label list gets past parsing (to the missing kubeconfig)', async () => {
    const r = await run('--include', 'shop,web////app=a,version=v1', '--exclude', 'shop//legacy-*,old-*', '--dry-run');
    expect(r.stderr).not.toMatch(/--include|--exclude/);
    expect(r.stderr).toMatch(/kubeconfig/i);
    expect(r.code).toBe(1);
  });
});

describe('the log window', () => {
  const log = ['2026-11-25T04:00:00.000Z one', '2026-11-25T04:30:00.000Z two', '  continued', '2026-11-25T05:00:00.000Z three', ''].join('\n');
  const end = Date.parse('2026-11-25T05:10:00Z');

  it('keeps every line without bounds, and the lines inside --start-time/--end-time', () => {
    expect(withinWindow(log, timeWindow({}, end))).toBe(log);
    expect(withinWindow(log, timeWindow({ startTime: '2026-11-25T04:15:00Z', endTime: '2026-11-25T04:45:00Z' }, end))).toBe('2026-11-25T04:30:00.000Z two\n  continued\n');
  });

  it('--duration counts back from the end', () => {
    expect(withinWindow(log, timeWindow({ durationMs: 20 * 60_000 }, end))).toBe('2026-11-25T05:00:00.000Z three\n');
  });

  it.each([
    [{ startTime: '2026-11-25T04:00:00Z', durationMs: 1000 }, /--start-time and --duration cannot both be set/],
    [{ startTime: 'noon' }, /--start-time: "noon" is not a time/],
    [{ startTime: '2026-11-25T06:00:00Z', endTime: '2026-11-25T05:00:00Z' }, /the log window is empty/],
  ])('refuses %j', (flags, message) => {
    expect(() => timeWindow(flags, end)).toThrow(message);
  });
});

it('ranks logs by critical matches and counts errors not ignored', () => {
  const text = ['info all good', 'error upstream reset before headers', 'error dial timeout', 'warn slow', 'error dial timeout'].join('\n');
  expect(importance(text, ['upstream reset'], ['*dial timeout*'])).toEqual({ critical: ['error upstream reset before headers'], criticalCount: 1, errors: 1 });
  expect(importance(text, [], [])).toMatchObject({ criticalCount: 0, errors: 3 });
});

it('writes a tar.gz the system tar reads, long paths included', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-tar-'));
  try {
    const long = `proxies/${'n'.repeat(63)}/${'p'.repeat(120)}/mesh-proxy.log`;
    const deep = `${'d'.repeat(60)}/${'e'.repeat(60)}/${'f'.repeat(60)}/${'g'.repeat(60)}/x.txt`;
    const entries = [
      { path: 'summary.json', content: '{"ok":true}\n' },
      { path: long, content: 'x'.repeat(1500) },
      { path: deep, content: '' },
      { path: 'cluster/ünïcode.json', content: '[]' },
    ].map((e, i) => {
      const file = path.join(dir, `f${i}`);
      fs.writeFileSync(file, e.content);
      return { path: e.path, file, content: e.content };
    });
    const archive = path.join(dir, 'a.tar.gz');
    await writeTarGz(archive, entries);
    expect(execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).trim().split('\n')).toEqual(entries.map((e) => e.path));
    for (const e of entries) expect(execFileSync('tar', ['-xzOf', archive, e.path], { encoding: 'utf8' })).toBe(e.content);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
