import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileConfigSource, type FileConfigSourceOptions } from '../../src/config/file-source.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import type { ConfigRejection } from '../../src/config/types.js';
import type { DestinationRule } from '../../src/gen/config/schemas.js';
import { eventually } from '../support/eventually.js';

/** A change must be visible within this time (the target is ~200 ms; the margin absorbs slow CI machines). */
const BOUND_MS = 1000;

const dr = (name: string, host: string, extra = '') =>
  `apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata:\n  name: ${name}\nspec:\n  host: ${host}\n${extra}`;

interface Harness {
  dir: string;
  store: MemoryConfigStore;
  source: FileConfigSource;
  rejections: ConfigRejection[];
  errors: Error[];
  host(name: string): string | undefined;
  names(): string[];
}

const running: Harness[] = [];

async function setup(files: Record<string, string>, options: Partial<FileConfigSourceOptions> = {}): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-config-'));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), content);
  }
  const store = new MemoryConfigStore();
  const rejections: ConfigRejection[] = [];
  const errors: Error[] = [];
  const source = new FileConfigSource({
    dir,
    store,
    defaultNamespace: 'default',
    onReject: (r) => rejections.push(r),
    onError: (e) => errors.push(e),
    rescanIntervalMs: 60_000, // watch events alone must be enough
    ...options,
  });
  const h: Harness = {
    dir,
    store,
    source,
    rejections,
    errors,
    host: (name) => store.get<DestinationRule>('DestinationRule', 'default', name)?.spec.host,
    names: () => store.list('DestinationRule').map((o) => o.meta.name),
  };
  running.push(h);
  return h;
}

/** Replaces a file the way careful tools do: write a temporary file, then rename it over the target. */
async function atomicWrite(path: string, content: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content);
  await rename(tmp, path);
}

afterEach(async () => {
  for (const h of running.splice(0)) {
    await h.source.stop();
    await rm(h.dir, { recursive: true, force: true });
  }
});

describe('FileConfigSource', () => {
  it('loads the whole tree before start() resolves, skipping hidden and non-config files', async () => {
    const h = await setup({
      'a.yaml': dr('a', 'a.example.com'),
      'nested/deeper/b.yml': dr('b', 'b.example.com'),
      'c.json': JSON.stringify({ apiVersion: 'networking.mesh.io/v1', kind: 'DestinationRule', metadata: { name: 'c' }, spec: { host: 'c' } }),
      '.hidden.yaml': dr('hidden', 'h'),
      '..data/d.yaml': dr('d', 'd'),
      'notes.txt': dr('txt', 't'),
    });
    expect(h.source.hasSynced()).toBe(false);
    await h.source.start();
    expect(h.source.hasSynced()).toBe(true);
    expect(h.store.hasSynced()).toBe(true);
    expect(h.names()).toEqual(['a', 'b', 'c']);
    expect(h.store.get('DestinationRule', 'default', 'b')?.meta.origin).toBe('nested/deeper/b.yml#0');
    expect(h.rejections).toEqual([]);
  });

  it('fails to start on a missing directory', async () => {
    const store = new MemoryConfigStore();
    const source = new FileConfigSource({ dir: join(tmpdir(), 'mesh-config-does-not-exist-42'), store, defaultNamespace: 'default' });
    await expect(source.start()).rejects.toThrow(/does not exist/);
  });

  for (const mode of ['watch', 'poll'] as const) {
    describe(`notices changes (${mode})`, () => {
      const options: Partial<FileConfigSourceOptions> = mode === 'watch' ? {} : { watch: false, pollIntervalMs: 50 };

      it('creates, edits in place, replaces atomically and deletes', async () => {
        const h = await setup({ 'a.yaml': dr('a', 'v1.example.com') }, options);
        await h.source.start();
        const events: string[] = [];
        h.store.onEvent((e) => events.push(`${e.type} ${e.object.meta.name}`));

        await writeFile(join(h.dir, 'new.yaml'), dr('n1', 'n.example.com'));
        await eventually('create', () => h.host('n1') === 'n.example.com', { timeoutMs: BOUND_MS });

        // Same length as before: only the content hash tells the versions apart.
        await writeFile(join(h.dir, 'a.yaml'), dr('a', 'v2.example.com'));
        await eventually('in-place edit', () => h.host('a') === 'v2.example.com', { timeoutMs: BOUND_MS });

        await atomicWrite(join(h.dir, 'a.yaml'), dr('a', 'v3.example.com'));
        await eventually('atomic rename', () => h.host('a') === 'v3.example.com', { timeoutMs: BOUND_MS });

        await mkdir(join(h.dir, 'sub'));
        await writeFile(join(h.dir, 'sub', 's.yaml'), dr('s', 's.example.com'));
        await eventually('file in a new directory', () => h.host('s') === 's.example.com', { timeoutMs: BOUND_MS });

        await rename(join(h.dir, 'new.yaml'), join(h.dir, 'renamed.yaml'));
        await eventually('rename', () => h.store.get('DestinationRule', 'default', 'n1')?.meta.origin === 'renamed.yaml#0', { timeoutMs: BOUND_MS });

        await rm(join(h.dir, 'renamed.yaml'));
        await rm(join(h.dir, 'sub'), { recursive: true });
        await eventually('delete', () => h.host('n1') === undefined && h.host('s') === undefined, { timeoutMs: BOUND_MS });

        expect(h.names()).toEqual(['a']);
        expect(events).toContain('update a');
        expect(events.filter((e) => e === 'delete n1')).toHaveLength(1);
        expect(h.errors).toEqual([]);
        // The rename is not reported as a duplicate of the old name.
        expect(h.rejections).toEqual([]);
      });

      it('notices within the target time', async () => {
        const h = await setup({}, options);
        await h.source.start();
        await writeFile(join(h.dir, 'fast.yaml'), dr('fast', 'f'));
        const started = Date.now();
        await eventually('create', () => h.host('fast') === 'f', { timeoutMs: BOUND_MS, intervalMs: 5 });
        const took = Date.now() - started;
        expect(took).toBeLessThan(mode === 'watch' ? 300 : 400);
      });
    });
  }

  it('keeps the last valid version of an invalid document and keeps serving other files', async () => {
    const h = await setup({ 'a.yaml': `${dr('a1', 'a1.example.com')}---\n${dr('a2', 'a2.example.com')}`, 'b.yaml': dr('b', 'b.example.com') });
    await h.source.start();

    // a1 becomes invalid, a2 changes: a2's new version loads, a1's old one stays.
    await atomicWrite(join(h.dir, 'a.yaml'), `${dr('a1', 'a1.example.com', '  subsets: [{name: V1}]\n')}---\n${dr('a2', 'a2-new.example.com')}`);
    await eventually('valid sibling update', () => h.host('a2') === 'a2-new.example.com', { timeoutMs: BOUND_MS });
    expect(h.host('a1')).toBe('a1.example.com');
    expect(h.rejections).toHaveLength(1);
    expect(h.rejections[0]).toMatchObject({ origin: 'a.yaml#0', kind: 'DestinationRule', name: 'a1', namespace: 'default' });
    expect(h.rejections[0].issues.map((i) => i.path)).toEqual(['spec.subsets[0].name', '']);
    expect(h.rejections[0].issues[1].message).toBe('the last valid version stays in effect');

    // The whole file turns into garbage: everything it defined stays; b is untouched.
    await atomicWrite(join(h.dir, 'a.yaml'), 'apiVersion: [unclosed\n  : :\n');
    await eventually('rejection of the broken file', () => h.rejections.length === 2, { timeoutMs: BOUND_MS });
    expect(h.rejections[1].issues[0].message).toMatch(/^YAML: /);
    expect(h.names()).toEqual(['a1', 'a2', 'b']);
    expect(h.host('a2')).toBe('a2-new.example.com');

    // Fixed again, without a1: now a1 goes away.
    await atomicWrite(join(h.dir, 'a.yaml'), dr('a2', 'a2-fixed.example.com'));
    await eventually('fixed file', () => h.host('a2') === 'a2-fixed.example.com', { timeoutMs: BOUND_MS });
    expect(h.names()).toEqual(['a2', 'b']);

    await rm(join(h.dir, 'a.yaml'));
    await eventually('delete', () => h.names().join() === 'b', { timeoutMs: BOUND_MS });
  });

  describe('a large document (parsed in a worker thread, docs/adr/0183)', () => {
    // more than LARGE_DOCUMENT_CHARS (256 KiB) of text in one document
    const large = (host: string): string => `${dr('big', host)}# ${'padding '.repeat(40_000)}\n`;

    it('loads, and an edit of it loads', async () => {
      const h = await setup({ 'big.yaml': large('one.example.com') });
      await h.source.start();
      expect(h.host('big')).toBe('one.example.com');
      expect(Object.isFrozen(h.store.get<DestinationRule>('DestinationRule', 'default', 'big')?.spec)).toBe(true);
      await atomicWrite(join(h.dir, 'big.yaml'), `${large('two.example.com')}---\n${dr('small', 'small.example.com')}`);
      await eventually('the edit', () => h.host('big') === 'two.example.com' && h.host('small') === 'small.example.com', { timeoutMs: 30_000 });
      expect(h.rejections).toEqual([]);
    });

    it('reads a large JSON document as JSON, and one with a key twice as YAML, which refuses it', async () => {
      // 3,000 subsets: ~300 KB of JSON; the YAML reader would build a document tree of ~80 times that (docs/adr/0204)
      const subsets = Array.from({ length: 3_000 }, (_, k) => ({ name: `v${k}`, labels: { version: `v${k}`, tier: 'a' } }));
      const note = 'a "quoted" \\ value, é\u00e9\n';
      const object = { apiVersion: 'networking.mesh.io/v1', kind: 'DestinationRule', metadata: { name: 'big', namespace: 'default', annotations: { note } }, spec: { host: 'json.example.com', subsets } };
      const h = await setup({ 'big.json': JSON.stringify(object, null, 1) });
      await h.source.start();
      expect(h.rejections).toEqual([]);
      const stored = h.store.get<DestinationRule>('DestinationRule', 'default', 'big');
      expect(stored?.spec.host).toBe('json.example.com');
      expect(stored?.spec.subsets).toEqual(subsets);
      expect(stored?.meta.annotations).toEqual({ note });
      expect(Object.isFrozen(stored?.spec.subsets?.[2999].labels)).toBe(true);
      const twice = JSON.stringify(object).replace('"host":"json.example.com"', '"host":"json.example.com","host":"other.example.com"');
      await atomicWrite(join(h.dir, 'big.json'), twice);
      await eventually('the refusal', () => h.rejections.length > 0, { timeoutMs: 30_000 });
      expect(h.rejections[0].issues[0].message).toMatch(/Map keys must be unique/);
      expect(h.host('big')).toBe('json.example.com');
    });

    it.each([
      ['time', { timeoutMs: 1 }, /^this document \(0\.3 MiB\) was not read: parsing took longer than 0\.001 s and was stopped$/],
    ])('is refused, naming the file, when the parser runs out of %s; the last good version stays', async (_what, limits, message) => {
      const h = await setup({ 'big.yaml': dr('big', 'good.example.com') }, { largeDocuments: limits });
      await h.source.start();
      expect(h.host('big')).toBe('good.example.com');
      await atomicWrite(join(h.dir, 'big.yaml'), large('new.example.com'));
      await eventually('the refusal', () => h.rejections.length > 0, { timeoutMs: 30_000 });
      expect(h.rejections[0]).toMatchObject({ origin: 'big.yaml#0' });
      expect(h.rejections[0].issues[0].message).toMatch(message);
      expect(h.host('big')).toBe('good.example.com');
    });
  });

  it('reports a duplicate across files and lets the second take over when the first goes', async () => {
    const h = await setup({ 'a.yaml': dr('same', 'from-a') });
    await h.source.start();
    await writeFile(join(h.dir, 'b.yaml'), dr('same', 'from-b'));
    await eventually('duplicate rejection', () => h.rejections.length === 1, { timeoutMs: BOUND_MS });
    expect(h.rejections[0].origin).toBe('b.yaml#0');
    expect(h.rejections[0].issues[0].message).toMatch(/already defined by a\.yaml#0/);
    expect(h.host('same')).toBe('from-a');
    await rm(join(h.dir, 'a.yaml'));
    await eventually('take-over', () => h.host('same') === 'from-b', { timeoutMs: BOUND_MS });
  });

  it('does not re-apply a file whose content did not change', async () => {
    const h = await setup({ 'a.yaml': dr('a', 'a') });
    await h.source.start();
    const events: string[] = [];
    h.store.onEvent((e) => events.push(e.type));
    await writeFile(join(h.dir, 'a.yaml'), dr('a', 'a'));
    await h.source.rescan();
    await new Promise((r) => setTimeout(r, 100));
    expect(events).toEqual([]);
  });
  it('dates a change by its watch event, before its own wait and the read (the push is debounced from then)', async () => {
    const h = await setup({ 'a.yaml': dr('a', 'a') }, { debounceMs: 300 });
    await h.source.start();
    const seen: Array<{ observedAt?: number; appliedAt: number }> = [];
    h.store.onEvent((e) => seen.push({ observedAt: e.observedAt, appliedAt: Date.now() }));
    const before = Date.now();
    await atomicWrite(join(h.dir, 'a.yaml'), dr('a', 'b'));
    const written = Date.now();
    await eventually('the edit is in the store', () => h.host('a') === 'b', { timeoutMs: BOUND_MS + 300 });
    expect(seen).toHaveLength(1);
    const { observedAt, appliedAt } = seen[0];
    expect(observedAt).toBeGreaterThanOrEqual(before);
    expect(observedAt).toBeLessThanOrEqual(written + 50);
    // the source's own 300 ms wait came after the event, and does not count toward the push's
    expect(appliedAt - observedAt!).toBeGreaterThanOrEqual(250);
    // a change the periodic rescan finds, with no watch event, is dated when it is read
    seen.length = 0;
    await h.source.stop();
    const polled = new FileConfigSource({ dir: h.dir, store: h.store, defaultNamespace: 'default', watch: false, pollIntervalMs: 20 });
    await polled.start();
    try {
      const t = Date.now();
      await writeFile(join(h.dir, 'a.yaml'), dr('a', 'c'));
      await eventually('the polled edit is in the store', () => h.host('a') === 'c', { timeoutMs: BOUND_MS });
      expect(seen).toHaveLength(1);
      expect(seen[0].observedAt).toBeGreaterThanOrEqual(t);
    } finally {
      await polled.stop();
    }
  });
  it('says a change is pending from the watch event until the store has it (the daemon holds certificate admission meanwhile)', async () => {
    const log: string[] = [];
    const h = await setup({ 'a.yaml': dr('a', 'a') }, { onChangePending: () => (log.push('pending'), () => log.push(`done: ${h.host('a')}`)) });
    await h.source.start();
    expect(log).toEqual([]); // loading at start is not a pending change
    h.store.onEvent(() => log.push('store event'));
    await atomicWrite(join(h.dir, 'a.yaml'), dr('a', 'b'));
    await eventually('the pending change ends', () => log.includes('done: b'), { timeoutMs: BOUND_MS });
    // opened before the store's event, ended after it
    expect(log.indexOf('pending')).toBeGreaterThanOrEqual(0);
    expect(log.indexOf('pending')).toBeLessThan(log.indexOf('store event'));
    expect(log.indexOf('store event')).toBeLessThan(log.indexOf('done: b'));
  });
});
