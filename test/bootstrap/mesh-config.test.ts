import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { MeshConfigWatcher, parseMeshConfig } from '../../src/bootstrap/mesh-config.js';
import { ConfigError } from '../../src/util/config-error.js';
import type { MeshSettings } from '../../src/model/mesh-settings.js';
import { eventually } from '../support/eventually.js';

const base = { domain: 'cluster.local', clusterId: 'Cluster' };
const log = pino({ level: 'silent' });

describe('mesh config file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mesh-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('uses defaults when the file is absent', async () => {
    const w = new MeshConfigWatcher(join(dir, 'absent.yaml'), base, log);
    const s = await w.load();
    w.stop();
    expect(s.outboundTrafficPolicy).toBe('ALLOW_ANY');
    expect(s.rootNamespace).toBe('mesh-system');
    expect(s.connectTimeoutMs).toBe(10_000);
  });

  it('names the field and the reason of an invalid value', () => {
    expect(() => parseMeshConfig('connectTimeout: soon\n', 'mesh.yaml')).toThrow(ConfigError);
    expect(() => parseMeshConfig('outboundTrafficPolicy: { mode: SOMETIMES }\n', 'mesh.yaml')).toThrow(/mesh\.yaml: outboundTrafficPolicy\.mode/);
    expect(() => parseMeshConfig('unknownField: 1\n', 'mesh.yaml')).toThrow(/mesh\.yaml/);
  });

  it('words schema problems as config documents do, value included', () => {
    expect(() => parseMeshConfig('outboundTrafficPolicy: { mode: SOMETIMES }\n', 'mesh.yaml')).toThrow(
      'mesh.yaml: outboundTrafficPolicy.mode: string "SOMETIMES" is not one of REGISTRY_ONLY, ALLOW_ANY',
    );
    expect(() => parseMeshConfig('connectTimeout: 5\n', 'mesh.yaml')).toThrow('mesh.yaml: connectTimeout: expected string, got number 5');
    expect(() => parseMeshConfig('unknownField: 1\n', 'mesh.yaml')).toThrow('mesh.yaml: unknownField: unknown field');
  });

  it('reads YAML as config documents are read (1.1: a bare yes is true)', () => {
    expect(parseMeshConfig('enableTracing: yes\n', 'mesh.yaml').enableTracing).toBe(true);
  });

  it('applies an edit, and keeps the last good settings when an edit is invalid', async () => {
    const path = join(dir, 'mesh.yaml');
    await writeFile(path, 'outboundTrafficPolicy: { mode: ALLOW_ANY }\nconnectTimeout: 5s\n');
    const w = new MeshConfigWatcher(path, base, log);
    expect((await w.load()).connectTimeoutMs).toBe(5000);
    const seen: MeshSettings[] = [];
    w.onChange((m) => seen.push(m));
    try {
      await writeFile(path, 'outboundTrafficPolicy: { mode: REGISTRY_ONLY }\nconnectTimeout: 5s\n');
      await eventually('the edit to be applied', () => seen.length === 1, { timeoutMs: 5000 });
      expect(seen[0].outboundTrafficPolicy).toBe('REGISTRY_ONLY');
      await writeFile(path, 'outboundTrafficPolicy: { mode: NOPE }\n');
      await new Promise((r) => setTimeout(r, 2500));
      expect(seen).toHaveLength(1);
    } finally {
      w.stop();
    }
  }, 15_000);
});
