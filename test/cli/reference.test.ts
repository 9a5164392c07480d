/**
 * docs/reference/ is generated from the code (src/cli/reference.ts, `npm run gen:reference`): the
 * committed pages must be what the code generates now, and they must carry every command, flag,
 * variable and metric the programs have.
 */
import { agentMetrics } from '../../src/agent/metrics.js';
import fs from 'node:fs';
import path from 'node:path';
import { referencePages, type ReferencePage } from '../../src/cli/reference.js';
import { DAEMON_ENV_VARS } from '../../src/config/daemon-env.js';
import { DISCOVERY_FLAGS } from '../../src/config/discovery-flags.js';
import { MESHCTL_ENV_VARS, SETTINGS } from '../../src/cli/meshctl/env.js';
import { createDaemonMetrics } from '../../src/bootstrap/daemon-metrics.js';
import { freePort, makeConfigDir, startDaemon } from '../support/daemon.js';
import { createOperatorMetrics } from '../../src/controllers/installation/metrics.js';
import { REPO_ROOT } from './spec-tables.js';

const DIR = path.join(REPO_ROOT, 'docs/reference');
let pages: ReferencePage[];
const page = (file: string): string => pages.find((p) => p.file === file)!.text;

beforeAll(async () => {
  pages = await referencePages();
});

describe('docs/reference', () => {
  it('is up to date with the code (npm run gen:reference regenerates it)', () => {
    expect(fs.readdirSync(DIR).sort()).toEqual(pages.map((p) => p.file).sort());
    for (const p of pages) {
      const committed = fs.readFileSync(path.join(DIR, p.file), 'utf8');
      expect({ file: p.file, upToDate: committed === p.text }).toEqual({ file: p.file, upToDate: true });
    }
  });

  it('lists every daemon flag with its type and default, every variable and every metric', async () => {
    const text = page('mesh-discovery.md');
    for (const f of DISCOVERY_FLAGS) expect(text).toMatch(new RegExp(`^\\| \`${f.flag}\` \\|.*\\| ${{ S: 'string', B: 'bool', D: 'duration', I: 'int' }[f.type as string] ?? f.type} \\|`, 'm'));
    expect(text).toContain('| `--keepaliveInterval` |  | duration | `30s` |');
    expect(text).toContain('| `--registries` |  | stringSlice | `Cluster` |');
    for (const v of DAEMON_ENV_VARS) expect(text).toContain(`| \`${v.name}\` |`);
    const metrics = await createDaemonMetrics({ defaultMetrics: false }).metrics.registry.getMetricsAsJSON();
    expect(metrics.length).toBeGreaterThan(30);
    for (const m of metrics) expect(text).toContain(`| \`${m.name}\` | ${m.type} |`);
  });

  it('lists every metric a running daemon exports, its CA\'s ca_server_* included (Node process metrics aside)', async () => {
    const dir = await makeConfigDir();
    const daemon = await startDaemon({ configDir: dir.path, env: { ENABLE_CA_SERVER: 'true' }, args: ['--secureGRPCAddr', `127.0.0.1:${await freePort()}`] });
    try {
      const exported = [...(await daemon.metrics()).matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => ({ name: m[1], type: m[2] }));
      const own = exported.filter((m) => !/^(process|nodejs)_/.test(m.name));
      expect(own.map((m) => m.name)).toEqual(expect.arrayContaining(['ca_server_csr_count', 'ca_server_root_cert_expiry_timestamp', 'disc_xds', 'controller_sync_errors_total']));
      const text = page('mesh-discovery.md');
      expect(own.filter((m) => !text.includes(`| \`${m.name}\` | ${m.type} |`))).toEqual([]);
    } finally {
      await daemon.stop();
      await dir.cleanup();
    }
  });

  it('lists every meshctl command, global flag and variable', () => {
    const text = page('meshctl.md');
    for (const s of SETTINGS.filter((s) => ['context', 'meshNamespace', 'clusterconfig', 'namespace', 'vklog'].includes(s.name))) {
      expect(text).toContain(`| \`--${s.name}\` |`);
    }
    for (const v of MESHCTL_ENV_VARS) expect(text).toContain(`| \`${v.name}\` |`);
    for (const cmd of ['analyze', 'install', 'manifest generate', 'experimental revision tag set', 'profile dump', 'verify-install', 'version']) {
      expect(text).toContain(`### meshctl ${cmd}\n`);
    }
    expect(text).toContain('| `--readiness-timeout` |  | duration | `5m0s` |');
    expect(text).toContain('| `--filename` | `-f` | stringSlice |  |');
    expect(text).toContain('| `--set` | `-s` | stringArray |  |');
  });

  it('lists the agent command and its metrics', async () => {
    const text = page('mesh-agent.md');
    expect(text).toContain('### mesh-agent proxy\n');
    for (const m of await agentMetrics(() => 0).registry.getMetricsAsJSON()) expect(text).toContain(`| \`${m.name}\` |`);
  });

  it('lists the operator controller and its metrics', async () => {
    const text = page('mesh-operator.md');
    expect(text).toContain('### mesh-operator server\n');
    for (const m of await createOperatorMetrics({ defaultMetrics: false }).registry.getMetricsAsJSON()) expect(text).toContain(`| \`${m.name}\` |`);
  });
});
