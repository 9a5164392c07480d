/**
 * The webhook metrics of the spec's table (cfg_validation_*, sidecar_injection_*) are all exported
 * by the daemon's registry, with the spec's names and types (Count and Sum are Prometheus
 * counters), and start at zero.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMetrics } from '../../src/metrics/metrics.js';
import { REPO_ROOT } from '../support/daemon.js';

const SPEC = readFileSync(join(REPO_ROOT, 'docs/spec/daemon-mesh-discovery.md'), 'utf8');
const ROWS = [...SPEC.matchAll(/^\| ((?:cfg_validation|sidecar_injection)_[a-z_]+) \| (\w+) \| ([^|]+) \|$/gm)].map((m) => ({ name: m[1] as string, type: m[2] as string, help: (m[3] as string).trim() }));
const PROM_TYPE: Record<string, string> = { Count: 'counter', Sum: 'counter', LastValue: 'gauge', Distribution: 'histogram' };

describe('webhook metrics of the spec', () => {
  it('the table lists them (the test reads the spec)', () => {
    expect(ROWS.map((r) => r.name)).toEqual(expect.arrayContaining(['cfg_validation_config_delete_error', 'cfg_validation_config_updates', 'sidecar_injection_requests_total']));
  });

  it.each(ROWS)('$name is a $type', async ({ name, type }) => {
    const text = await createMetrics({ defaultMetrics: false }).registry.metrics();
    expect(text).toContain(`# TYPE ${name} ${PROM_TYPE[type]}\n`);
  });

  it('cfg_validation_config_delete_error: the spec help text, at zero', async () => {
    const m = createMetrics({ defaultMetrics: false });
    const text = await m.registry.metrics();
    expect(text).toContain('# HELP cfg_validation_config_delete_error Webhook configuration delete errors.\n');
    expect(text).toMatch(/^cfg_validation_config_delete_error 0$/m);
  });
});
