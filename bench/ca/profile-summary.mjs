/**
 * Where a process's main thread spent its time, from a V8 CPU profile (`node --cpu-prof`, e.g.
 * `npm run bench:ca -- --profile 1`):
 *
 *   node bench/ca/profile-summary.mjs <file.cpuprofile> [--from <s>] [--to <s>] [--top 25]
 *   node bench/ca/profile-summary.mjs <file.cpuprofile> --edits <edits-<pid>.json> [--slow 4] [--top 25]
 *
 * Self time is grouped by where the code lives (the project's folders under dist/, packages under
 * node_modules, Node's internals, native and GC) and listed per function. --from/--to cut a window
 * (seconds since the profile started), e.g. the storm only.
 *
 * --edits reads the edit times bench/ca writes with --profile (each edit's write, CLOCK_MONOTONIC µs
 * like the profile's timestamps, and its slowest client): for the `--slow` slowest edits of each
 * storm it prints the main thread's time from the write to the last client's ACK in 50 ms steps,
 * and then the functions of those windows against those of the storm's other edits (per second of
 * window), i.e. what the slow edits had to wait behind.
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const file = args.find((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
if (!file) {
  console.error('usage: profile-summary.mjs <file.cpuprofile> [--from s] [--to s] [--top n] [--edits edits.json [--slow n]]');
  process.exit(2);
}
const top = Number(opt('top', 25));

const p = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));

function group(n) {
  const url = n.callFrame.url ?? '';
  const fn = n.callFrame.functionName;
  if (!url) return fn.startsWith('(') ? fn : `(native) ${fn || 'anonymous'}`;
  let m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  m = /\/dist\/([^/]+)\//.exec(url);
  if (m) return `project ${m[1]}`;
  if (url.startsWith('node:')) return `node ${url.slice(5).split('/').slice(0, 2).join('/')}`;
  return url;
}
const fnName = (n) => `${n.callFrame.functionName || '(anonymous)'} ${(n.callFrame.url || '').replace(/^.*\/(node_modules|dist)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;

/** Samples as [absolute µs, duration µs, node]. */
const samples = [];
{
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i];
    samples.push([t, p.timeDeltas[i + 1] ?? p.timeDeltas[i], byId.get(p.samples[i])]);
  }
}

/** Self time by group and by function of the samples in [fromUs, toUs) (absolute). */
function sum(fromUs, toUs, into = { total: 0, groups: new Map(), fns: new Map() }) {
  for (const [t, dt, n] of samples) {
    if (t < fromUs || t >= toUs) continue;
    const g = group(n);
    if (g === '(idle)') continue;
    into.total += dt;
    into.groups.set(g, (into.groups.get(g) ?? 0) + dt);
    into.fns.set(fnName(n), (into.fns.get(fnName(n)) ?? 0) + dt);
  }
  return into;
}
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
const pct = (us, total) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);

const editsFile = opt('edits', undefined);
if (!editsFile) {
  const from = Number(opt('from', 0));
  const to = Number(opt('to', Infinity));
  const s = sum(p.startTime + from * 1e6, to === Infinity ? Infinity : p.startTime + to * 1e6);
  console.log(`busy (not idle): ${(s.total / 1e6).toFixed(2)} s in [${from}, ${to === Infinity ? 'end' : to}] s`);
  console.log('\nby where the code lives');
  for (const [g, us] of sorted(s.groups).slice(0, top)) console.log(`${ms(us)} ${pct(us, s.total)}  ${g}`);
  console.log('\nby function (self time)');
  for (const [f, us] of sorted(s.fns).slice(0, top)) console.log(`${ms(us)} ${pct(us, s.total)}  ${f}`);
} else {
  const edits = JSON.parse(readFileSync(editsFile, 'utf8'));
  const slowN = Number(opt('slow', 4));
  for (const phase of [...new Set(edits.map((e) => e.phase))]) {
    const list = edits.filter((e) => e.phase === phase).sort((a, b) => b.maxMs - a.maxMs);
    const slow = phase === 'quiet' ? [] : list.slice(0, slowN);
    const rest = phase === 'quiet' ? list : list.slice(slowN);
    const restSum = { total: 0, groups: new Map(), fns: new Map() };
    let restUs = 0;
    for (const e of rest) {
      sum(e.writtenAtUs, e.writtenAtUs + e.maxMs * 1000, restSum);
      restUs += e.maxMs * 1000;
    }
    console.log(`\n== ${phase}: ${list.length} edits, slowest client ${list.map((e) => e.maxMs.toFixed(0)).slice(0, 8).join(', ')} … ms; ` +
      `main thread busy ${((100 * restSum.total) / restUs).toFixed(0)} % of the other edits' windows`);
    const slowSum = { total: 0, groups: new Map(), fns: new Map() };
    let slowUs = 0;
    for (const e of slow) {
      const at = (e.writtenAtUs - p.startTime) / 1e6;
      console.log(`\n-- edit at ${at.toFixed(2)} s of the profile: last ACK after ${e.maxMs.toFixed(0)} ms; main thread per 50 ms (busy ms: top groups)`);
      for (let f = e.writtenAtUs; f < e.writtenAtUs + e.maxMs * 1000; f += 50_000) {
        const s = sum(f, f + 50_000);
        console.log(`  +${((f - e.writtenAtUs) / 1000).toFixed(0).padStart(5)} ms ${(s.total / 1000).toFixed(0).padStart(3)} ms: ${sorted(s.groups).slice(0, 4).map(([g, us]) => `${g} ${(us / 1000).toFixed(0)}`).join(', ')}`);
      }
      sum(e.writtenAtUs, e.writtenAtUs + e.maxMs * 1000, slowSum);
      slowUs += e.maxMs * 1000;
    }
    if (slow.length === 0) continue;
    const rate = (us, windowUs) => `${((us / windowUs) * 1000).toFixed(0).padStart(5)} ms/s`;
    console.log(`\n${phase}: by where the code lives, per second of window: slowest ${slow.length} | other ${rest.length}`);
    const groups = [...new Set([...slowSum.groups.keys(), ...restSum.groups.keys()])].map((g) => [g, (slowSum.groups.get(g) ?? 0) / slowUs, (restSum.groups.get(g) ?? 0) / Math.max(1, restUs)]);
    for (const [g, a, b] of groups.sort((x, y) => y[1] - x[1]).slice(0, top)) console.log(`${rate(a, 1)} | ${rate(b, 1)}  ${g}`);
    console.log(`\n${phase}: by function (self time), per second of window: slowest ${slow.length} | other ${rest.length}`);
    const fns = [...new Set([...slowSum.fns.keys(), ...restSum.fns.keys()])].map((f) => [f, (slowSum.fns.get(f) ?? 0) / slowUs, (restSum.fns.get(f) ?? 0) / Math.max(1, restUs)]);
    for (const [f, a, b] of fns.sort((x, y) => y[1] - x[1]).slice(0, top)) console.log(`${rate(a, 1)} | ${rate(b, 1)}  ${f}`);
  }
}
