/**
 * The one Prometheus text parser of the tests: the exposition format of `/metrics` (the daemon's,
 * the operator's) and of prom-client registries read in-process.
 */

export interface MetricSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

function unescapeLabel(v: string): string {
  return v.replace(/\\(["\\n])/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

/** Parses the sample lines of a Prometheus text exposition (comments and blank lines skipped). */
export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/;
  const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const raw of text.split('\n')) {
    const l = raw.trim();
    if (l === '' || l.startsWith('#')) continue;
    const m = line.exec(l);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const lm of (m[2] ?? '').matchAll(label)) labels[lm[1]] = unescapeLabel(lm[2]);
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    samples.push({ name: m[1], labels, value });
  }
  return samples;
}

/** Sum of the samples named `name` (exactly) whose labels include `labels`; 0 when there are none. */
export function metricValue(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  let sum = 0;
  for (const s of parseMetrics(text)) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}
