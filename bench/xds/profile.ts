/**
 * Summarizes a V8 `.cpuprofile` (as written by `node --cpu-prof`): self time and inclusive time per
 * function, optionally restricted to time windows. Sample timestamps are CLOCK_MONOTONIC
 * microseconds, the clock of process.hrtime, so windows recorded by the runner line up.
 *
 * Usage: node bench/dist/xds/profile.js <file.cpuprofile> [top=25]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { table } from './stats.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Window {
  readonly label: string;
  /** CLOCK_MONOTONIC microseconds. */
  readonly fromUs: number;
  readonly toUs: number;
}

export interface FunctionTime {
  readonly name: string;
  readonly location: string;
  readonly ms: number;
  /** Share of the busy (non-idle) time of the window, percent. */
  readonly pct: number;
}

export interface ProfileSummary {
  readonly label: string;
  readonly wallMs: number;
  readonly busyMs: number;
  readonly self: FunctionTime[];
  /** Inclusive time of the project's own functions (dist/), a function counted once per sample. */
  readonly inclusive: FunctionTime[];
  /** Self time grouped by where the code lives. */
  readonly byArea: FunctionTime[];
}

function shortUrl(url: string): string {
  if (!url) return '';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + '/node_modules/'.length);
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
}

function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native/builtin)';
  if (url.startsWith('node:')) return 'node: core';
  const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  const d = /\/dist\/([^/]+(?:\/[^/]+)?)\//.exec(url);
  if (d) return `dist/${d[1]}`;
  return url;
}

function keyOf(f: CallFrame): string {
  return `${f.functionName || '(anonymous)'}\u0000${shortUrl(f.url)}:${f.lineNumber + 1}`;
}

export function summarize(profile: CpuProfile, window?: Window, top = 25): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const areas = new Map<string, number>();
  let t = profile.startTime;
  let wall = 0;
  let busy = 0;
  const n = profile.samples.length;
  for (let i = 0; i < n; i++) {
    t += profile.timeDeltas[i];
    // a sample stands for the time until the next one
    const dur = i + 1 < n ? profile.timeDeltas[i + 1] : 0;
    if (window && (t < window.fromUs || t >= window.toUs)) continue;
    const node = byId.get(profile.samples[i]);
    if (!node) continue;
    wall += dur;
    const f = node.callFrame;
    if (f.functionName === '(idle)') continue;
    busy += dur;
    const k = keyOf(f);
    self.set(k, (self.get(k) ?? 0) + dur);
    const a = area(f.url, f.functionName);
    areas.set(a, (areas.get(a) ?? 0) + dur);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const cf = byId.get(id)!.callFrame;
      if (!cf.url.includes('/dist/') || cf.url.includes('/node_modules/')) continue;
      const ck = keyOf(cf);
      if (seen.has(ck)) continue;
      seen.add(ck);
      incl.set(ck, (incl.get(ck) ?? 0) + dur);
    }
  }
  const list = (m: Map<string, number>, k = top): FunctionTime[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([key, us]) => {
        const [name, location] = key.split('\u0000');
        return { name, location: location ?? '', ms: us / 1000, pct: busy > 0 ? (100 * us) / busy : 0 };
      });
  return { label: window?.label ?? 'whole run', wallMs: wall / 1000, busyMs: busy / 1000, self: list(self), inclusive: list(incl), byArea: list(areas, 12) };
}

export function formatSummary(s: ProfileSummary, top = 15): string {
  const rows = (l: FunctionTime[]): string[][] => l.slice(0, top).map((f) => [f.name, f.location, f.ms.toFixed(0), f.pct.toFixed(1)]);
  return [
    `profile [${s.label}]: ${s.busyMs.toFixed(0)} ms busy of ${s.wallMs.toFixed(0)} ms`,
    table(['self time: function', 'location', 'ms', '%busy'], rows(s.self)),
    '',
    table(['inclusive (project code)', 'location', 'ms', '%busy'], rows(s.inclusive)),
    '',
    table(['self time by area', '', 'ms', '%busy'], s.byArea.map((f) => [f.name, '', f.ms.toFixed(0), f.pct.toFixed(1)])),
  ].join('\n');
}

export function loadProfile(path: string): CpuProfile {
  return JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node bench/dist/xds/profile.js <file.cpuprofile> [top]');
    process.exit(2);
  }
  const top = Number(process.argv[3] ?? 25);
  console.log(formatSummary(summarize(loadProfile(file), undefined, top), top));
}
