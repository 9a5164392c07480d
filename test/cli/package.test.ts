/**
 * The package as a user installs it (docs/adr/0025-installable-cli.md): `npm pack` of the built
 * project, unpacked into an empty directory. meshctl's bin is a bundle (dist/bin/meshctl.js, made
 * by `npm run build`) that runs there with no node_modules at all, directly or through its #!
 * line (on the Node that runs the tests), and finds the package's built-in profiles and CRDs; the
 * tarball holds what the bins need and none of the sources, tests or source maps (but the bundles'
 * own, ADR 0194); and meshctl's
 * start-up loads only the bundle's start-up files, none of the heavy packages its commands import
 * lazily.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

let work = '';
let unpacked = '';
let files: string[] = [];

function run(command: string, args: readonly string[], cwd: string): Run {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, HOME: work, MESHCONFIG: '', KUBECONFIG: join(work, 'none') }, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  if (!existsSync(join(REPO_ROOT, pkg.bin.meshctl))) throw new Error(`${pkg.bin.meshctl} is missing: run \`npm run build\` first`);
  work = mkdtempSync(join(tmpdir(), 'mesh-package-'));
  const packed = run('npm', ['pack', '--json', '--pack-destination', work], REPO_ROOT);
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`);
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  files = info.files.map((f) => f.path);
  const untar = run('tar', ['-xzf', join(work, info.filename), '-C', work], work);
  if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr}`);
  unpacked = join(work, 'package');
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('holds every bin target, the profiles and the CRDs, and no sources, tests or source maps but the bundles\' own', () => {
    for (const target of Object.values(pkg.bin)) expect(files).toContain(target);
    expect(files).toContain('manifests/profiles/default.yaml');
    expect(files.some((f) => f.startsWith('crds/'))).toBe(true);
    const stray = files.filter((f) => /^(src|test|e2e|bench|docs|scripts|tools|proto|node_modules)\//.test(f) || (f.endsWith('.map') && !/^dist\/bin\/[\w-]+\.js\.map$/.test(f)) || f.endsWith('.ts'));
    expect(stray).toEqual([]);
    // The bundles' maps (no source text in them) turn the daemon's log callers and stacks into `src/` positions (ADR 0194).
    expect(files).toContain(`${pkg.bin['mesh-discovery']}.map`);
  });

  it('runs meshctl from its bundle with no node_modules beside it', () => {
    expect(existsSync(join(unpacked, 'node_modules'))).toBe(false);
    const meshctl = join(unpacked, pkg.bin.meshctl);
    const version = run(process.execPath, [meshctl, 'version', '--remote=false', '-o', 'json'], work);
    expect(version.stderr).toBe('');
    expect(version.status).toBe(0);
    expect(JSON.parse(version.stdout)).toMatchObject({ clientVersion: { version: pkg.version, nodeVersion: process.version } });
    // The build stamp travels with the bundle (scripts/build-stamp.mjs, ADR 0027).
    const stamp = JSON.parse(readFileSync(join(REPO_ROOT, 'dist/bin/build-stamp.json'), 'utf8')) as Record<string, string>;
    expect(JSON.parse(version.stdout).clientVersion).toEqual({ ...stamp, nodeVersion: process.version });

    const help = run(process.execPath, [meshctl, '--help'], work);
    expect(help.status).toBe(0);
    for (const command of ['install', 'manifest', 'analyze', 'version']) expect(help.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
  });

  it('starts meshctl through its #! line on the Node that runs the tests (the pinned one under npm)', () => {
    const r = run(join(unpacked, pkg.bin.meshctl), ['version', '--remote=false', '-o', 'json'], work);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ clientVersion: { nodeVersion: process.version } });
  });

  it('renders the built-in profile with the CRDs shipped in the package', () => {
    const r = run(process.execPath, [join(unpacked, pkg.bin.meshctl), 'manifest', 'generate', '--set', 'profile=demo'], work);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^kind: CustomResourceDefinition$/m);
    expect(r.stdout).toMatch(/^kind: Deployment$/m);
  });

  it('refuses a bad flag of the bundled meshctl with a message and a non-zero exit', () => {
    const r = run(process.execPath, [join(unpacked, pkg.bin.meshctl), 'version', '--output', 'toml', '--remote=false'], work);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/toml/);
  });

  it('runs the daemon, operator and agent bins from the package once their dependencies are installed', () => {
    // Stand-in for `npm install` of the dependencies: the project's own node_modules.
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(unpacked, 'node_modules'), 'dir');
    for (const bin of ['mesh-discovery', 'mesh-operator', 'mesh-agent']) {
      const r = run(process.execPath, [join(unpacked, pkg.bin[bin]), 'version', '-o', 'json'], work);
      expect({ bin, status: r.status, stderr: r.stderr }).toEqual({ bin, status: 0, stderr: '' });
      expect(JSON.parse(r.stdout)).toMatchObject({ clientVersion: { version: pkg.version } });
    }
  });
});

describe('meshctl start-up', () => {
  it('loads no heavy package before a command needs it', () => {
    // esbuild's account of the bundle (scripts/bundle.mjs): the files meshctl.js imports statically
    // are what every start-up reads; the Kubernetes client, zod, yaml and the generated protocol
    // code belong in chunks that only a command's action imports.
    const meta = JSON.parse(readFileSync(join(REPO_ROOT, 'dist', 'bin', 'meta.json'), 'utf8')) as {
      outputs: Record<string, { imports: { path: string; kind: string }[]; inputs: Record<string, unknown> }>;
    };
    const seen = new Set<string>();
    const queue = ['dist/bin/meshctl.js'];
    while (queue.length > 0) {
      const out = queue.pop() as string;
      if (seen.has(out)) continue;
      seen.add(out);
      for (const i of meta.outputs[out]?.imports ?? []) if (i.kind === 'import-statement' && meta.outputs[i.path]) queue.push(i.path);
    }
    const inputs = [...seen].flatMap((out) => Object.keys(meta.outputs[out].inputs));
    const packages = new Set(inputs.map((i) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(i)?.[1]).filter((p) => p !== undefined));
    expect([...packages]).toEqual(['commander']);
    expect(inputs.filter((i) => i.startsWith('src/gen/'))).toEqual([]);
  });
});
