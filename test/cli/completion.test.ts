/**
 * Dynamic completion: `__complete` answers (subcommands, flags, flag values, positional values,
 * values from the local Kubernetes plane, directives), and the bash script end to end with the
 * bash-completion package, the built program and a real cluster. The other shells' scripts are
 * checked for syntax where the shell is installed.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Directive, PROVIDER_DEADLINE_MS } from '../../src/cli/complete.js';
import { main as meshDiscovery } from '../../src/cli/mesh-discovery.js';
import { main as meshctl } from '../../src/cli/meshctl.js';
import type { KubeClient } from '../../src/kube/client.js';
import { createNamespace, deleteNamespace, kubeTestEnv } from '../kube/helpers.js';
import { captureIO } from './capture.js';
import { distProgram } from './dist.js';

type Main = typeof meshctl;

let kubeconfig: string;
let client: KubeClient;
let ns: string | undefined;
let dir: string;
const tag = `t${process.pid}`;

beforeAll(async () => {
  const env = await kubeTestEnv();
  kubeconfig = env.cluster.kubeconfig;
  client = env.client;
  ns = await createNamespace(client, 'cli-complete');
  const labels = { app: 'meshd', 'mesh.io/rev': `canary${process.pid}` };
  await client.create({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'meshd-canary', namespace: ns, labels },
    spec: { replicas: 0, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'discovery', image: 'registry.example/meshd:1.0.0' }] } } },
  });
  await client.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: `mesh-revision-tag-${tag}`, labels: { 'mesh.io/tag': tag, 'mesh.io/rev': `canary${process.pid}` } },
    webhooks: [],
  });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'completion-'));
}, 10 * 60_000);

afterAll(async () => {
  await client.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', name: `mesh-revision-tag-${tag}` }).catch(() => undefined);
  await deleteNamespace(client, ns);
  client.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `<program> __complete <args>` in-process; returns the candidates and the directive. */
async function complete(args: string[], opts: { env?: Record<string, string>; program?: Main; descriptions?: boolean } = {}) {
  const c = captureIO({ KUBECONFIG: kubeconfig, ...opts.env });
  const code = await (opts.program ?? meshctl)([opts.descriptions === false ? '__completeNoDesc' : '__complete', ...args], c.io);
  expect({ code, stderr: c.stderr() }).toEqual({ code: 0, stderr: '' });
  const lines = c.stdout().trimEnd().split('\n');
  const last = lines.pop() ?? '';
  expect(last).toMatch(/^:\d+$/);
  return { values: lines.map((l) => l.split('\t')[0]), lines, directive: Number(last.slice(1)) };
}

describe('__complete', () => {
  it('offers subcommands with descriptions, names only with __completeNoDesc', async () => {
    const r = await complete(['']);
    expect(r.values).toEqual(expect.arrayContaining(['analyze', 'install', 'version', 'experimental', 'completion', 'options']));
    expect(r.values).not.toContain('__complete');
    expect(r.lines).toContain('version\tPrints build version information.');
    expect(r.directive).toBe(Directive.NoFileComp);
    expect((await complete(['vers'], { descriptions: false })).lines).toEqual(['version']);
    expect((await complete(['ver'], { descriptions: false })).lines).toEqual(['verify-install', 'version']);
    // Aliases lead to their command: x is experimental.
    expect((await complete(['x', 'revision', ''])).values).toEqual(['list', 'describe', 'tag', 'help']);
    expect((await complete(['completion', ''])).values).toEqual(['bash', 'fish', 'powershell', 'zsh', 'help']);
  });

  it('offers the flags of the command and the global flags, after any words', async () => {
    const r = await complete(['-n', 'shop', 'version', '--']);
    expect(r.values).toEqual(expect.arrayContaining(['--output', '--short', '--remote', '--revision', '--help', '--context', '--meshNamespace', '--namespace', '--vklog']));
    expect(r.values.every((v) => v.startsWith('--'))).toBe(true);
    expect((await complete(['x', 'revision', 'list', '--o'])).values).toEqual(['--output']); // a group flag of x revision
    expect((await complete(['analyze', '--use-'])).lines).toEqual(['--use-cluster\tUse the live cluster; --use-cluster=false analyzes the files alone.']);
  });

  it('offers the choices of -o and thresholds, after a space or after =', async () => {
    expect((await complete(['version', '-o', ''])).values).toEqual(['yaml', 'json']);
    expect((await complete(['analyze', '--output', ''])).values).toEqual(['log', 'json', 'yaml']);
    expect((await complete(['profile', 'dump', '-o', ''])).values).toEqual(['yaml', 'json', 'flags']);
    expect((await complete(['x', 'revision', 'list', '-o', 'j'])).values).toEqual(['json']);
    expect((await complete(['analyze', '--failure-threshold=W'])).values).toEqual(['--failure-threshold=Warning']);
    expect((await complete(['analyze', '--use-cluster='])).values).toEqual(['--use-cluster=true', '--use-cluster=false']);
    expect((await complete(['version', '--output='])).values).toEqual(['--output=yaml', '--output=json']);
  });

  it('skips flag values when finding the command, and stops reading flags after --', async () => {
    expect((await complete(['-n', 'profile', 'profile', 'd'])).values).toEqual(['dump', 'diff']);
    expect((await complete(['--namespace=x', 'tag', 'l'])).values).toEqual(['list']);
    expect((await complete(['analyze', '--', '-'])).directive).toBe(Directive.Default);
  });

  it('offers profiles for --set profile= and profile dump|diff, from -d when given', async () => {
    expect((await complete(['install', '--set', 'profile=de'])).values).toEqual(['profile=default', 'profile=demo']);
    expect((await complete(['install', '-s', ''])).values).toEqual(expect.arrayContaining(['profile=default', 'profile=minimal']));
    expect((await complete(['install', '--set', 'components.'])).values).toEqual([]);
    expect((await complete(['profile', 'dump', ''])).values).toEqual(expect.arrayContaining(['default', 'demo', 'minimal']));
    expect(await complete(['profile', 'dump', 'mi'])).toMatchObject({ values: ['minimal'], directive: Directive.NoFileComp });
    expect(await complete(['profile', 'diff', 'default', 'mi'])).toMatchObject({ values: ['minimal'], directive: Directive.Default }); // or a file
    const own = path.join(dir, 'manifests');
    fs.mkdirSync(path.join(own, 'profiles'), { recursive: true });
    fs.writeFileSync(path.join(own, 'profiles', 'tiny.yaml'), 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\n');
    expect((await complete(['profile', 'dump', '-d', own, ''])).values).toEqual(['tiny']);
  });

  it('leaves files, directories or nothing to the shell, as the value asks', async () => {
    expect(await complete(['validate', '-f', ''])).toMatchObject({ values: [], directive: Directive.Default });
    expect(await complete(['manifest', 'generate', '-o', ''])).toMatchObject({ values: [], directive: Directive.FilterDirs });
    expect(await complete(['install', '-d', ''])).toMatchObject({ values: [], directive: Directive.FilterDirs });
    expect(await complete(['analyze', ''])).toMatchObject({ values: [], directive: Directive.Default });
    expect(await complete(['version', ''])).toMatchObject({ values: [], directive: Directive.NoFileComp });
    expect(await complete(['analyze', '--timeout', ''])).toMatchObject({ values: [], directive: Directive.NoFileComp });
  });

  it('offers namespaces, contexts, revisions and tags from the cluster', async () => {
    expect((await complete(['-n', ''])).values).toEqual(expect.arrayContaining(['default', 'kube-system', ns]));
    expect((await complete(['version', '-i', 'cli-compl'])).values).toEqual([ns]);
    expect((await complete(['--context', ''])).lines).toEqual(['mesh-local\tcluster mesh-local']);
    expect((await complete(['-c', kubeconfig, '--context', ''], { env: { KUBECONFIG: '' } })).values).toEqual(['mesh-local']);
    const revisions = await complete(['x', 'uninstall', '-r', '']);
    expect(revisions.lines).toContain(`canary${process.pid}\trevision (tags: ${tag})`);
    expect((await complete(['x', 'revision', 'describe', `canary${process.pid}`])).values).toEqual([`canary${process.pid}`]);
    expect((await complete(['tag', 'remove', tag])).lines).toEqual([`${tag}\ttag of revision canary${process.pid}`]);
    expect((await complete(['x', 'revision', 'tag', 'remove', tag])).values).toEqual([tag]);
  });

  it('offers nothing, quickly and silently, when the cluster cannot be asked', async () => {
    const started = Date.now();
    expect(await complete(['-c', path.join(dir, 'missing.kubeconfig'), '-n', ''])).toEqual({ values: [], lines: [], directive: Directive.NoFileComp });
    const closed = path.join(dir, 'closed.kubeconfig');
    fs.writeFileSync(closed, fs.readFileSync(kubeconfig, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, 'server: https://127.0.0.1:1'));
    expect((await complete(['-c', closed, 'x', 'uninstall', '-r', ''])).values).toEqual([]);
    // A server that accepts connections but never answers: the lookup gives up in time.
    const net = await import('node:net');
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const hanging = path.join(dir, 'hanging.kubeconfig');
    fs.writeFileSync(hanging, fs.readFileSync(kubeconfig, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${port}`));
    const hangStarted = Date.now();
    expect((await complete(['-c', hanging, '-n', ''])).values).toEqual([]);
    expect(Date.now() - hangStarted).toBeLessThan(PROVIDER_DEADLINE_MS + 1000);
    silent.close();
    expect(Date.now() - started).toBeLessThan(3 * (PROVIDER_DEADLINE_MS + 1000));
  });

  it('completes mesh-discovery, its lazily loaded daemon flags included', async () => {
    expect((await complete(['discovery', '--registries', ''], { program: meshDiscovery })).values).toEqual(['Cluster', 'Mock']);
    expect((await complete(['discovery', '--log_tar'], { program: meshDiscovery })).values).toEqual(['--log_target']);
    expect((await complete(['help', 'dis'], { program: meshDiscovery })).values).toEqual(['discovery']);
    expect((await complete(['version', '-o', ''], { program: meshDiscovery })).values).toEqual(['yaml', 'json']);
  });
});

// ---- the scripts ------------------------------------------------------------------------------

const has = (shell: string) => spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;
const BASH_COMPLETION = ['/usr/share/bash-completion/bash_completion', '/etc/bash_completion'].find((f) => fs.existsSync(f));

/** A folder with `meshctl` and `mesh-discovery` commands that run the built programs. */
function binDir(): string {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  for (const prog of ['meshctl', 'mesh-discovery'] as const) {
    const file = path.join(bin, prog);
    fs.writeFileSync(file, `#!/bin/sh\nexec "${process.execPath}" "${distProgram(prog)}" "$@"\n`, { mode: 0o755 });
  }
  return bin;
}

async function script(program: Main, shell: string, extra: string[] = []): Promise<string> {
  const c = captureIO();
  expect(await program(['completion', shell, ...extra], c.io)).toBe(0);
  const file = path.join(dir, `${shell}${extra.join('')}${program === meshctl ? '.ctl' : '.disc'}`);
  fs.writeFileSync(file, c.stdout());
  return file;
}

/** Splits a command line into words the way bash does for completion (= and : are words of their own). */
function bashWords(line: string): string[] {
  return line.split(' ').flatMap((w) => w.split(/([=:])/).filter((p) => p !== ''));
}

describe('the bash script, end to end', () => {
  const itBash = has('bash') && BASH_COMPLETION ? it : it.skip;
  let file: string;
  let described: string;
  let bin: string;
  beforeAll(async () => {
    file = await script(meshctl, 'bash', ['--no-descriptions']);
    described = await script(meshctl, 'bash');
    bin = binDir();
  });

  /** Completes `line` (the cursor at its end) as bash with bash-completion would; returns COMPREPLY. */
  function tab(line: string, scriptFile = file, cwd = dir): string[] {
    const words = bashWords(line);
    if (line.endsWith(' ')) words.push('');
    const code = [
      `source ${BASH_COMPLETION}`,
      `source ${scriptFile}`,
      `COMP_LINE=${JSON.stringify(line)}; COMP_POINT=\${#COMP_LINE}`,
      `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}`,
      `__meshctl_complete`,
      `printf '%s\\n' "\${COMPREPLY[@]}"`,
    ].join('\n');
    const r = spawnSync('bash', ['-c', code], { encoding: 'utf8', cwd, env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, KUBECONFIG: kubeconfig, COLUMNS: '200' } });
    expect(r.stderr).toBe('');
    return r.stdout.split('\n').filter((l) => l !== '');
  }

  itBash('registers the function for meshctl', () => {
    const r = spawnSync('bash', ['-c', `source ${BASH_COMPLETION}; source ${file}; complete -p meshctl`], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe('complete -F __meshctl_complete meshctl');
  });

  itBash('completes commands, flags and values through meshctl __complete', () => {
    expect(tab('meshctl ')).toEqual(expect.arrayContaining(['analyze', 'install', 'version']));
    expect(tab('meshctl vers')).toEqual(['version']);
    expect(tab('meshctl x rev')).toEqual(['revision']);
    expect(tab('meshctl version --o')).toEqual(['--output']);
    expect(tab('meshctl version -o ')).toEqual(['yaml', 'json']);
    expect(tab('meshctl version --output=j')).toEqual(['json']);
    expect(tab('meshctl install --set profile=de')).toEqual(['default', 'demo']);
    expect(tab('meshctl profile dump mi')).toEqual(['minimal']);
  });

  itBash('completes from the cluster: namespaces and revisions', () => {
    expect(tab('meshctl -n cli-compl')).toEqual([ns]);
    expect(tab(`meshctl tag remove ${tag.slice(0, -1)}`)).toEqual([tag]);
    expect(tab('meshctl x uninstall -r ')).toContain(`canary${process.pid}`);
  });

  itBash('completes directories for a <dir> value, and leaves files to bash for a <file>', () => {
    const cwd = path.join(dir, 'cwd');
    fs.mkdirSync(path.join(cwd, 'out-dir'), { recursive: true });
    fs.writeFileSync(path.join(cwd, 'out-file.yaml'), '');
    expect(tab('meshctl manifest generate -o ou', file, cwd)).toEqual(['out-dir']);
    expect(tab('meshctl validate -f ou', file, cwd)).toEqual([]); // bash's own file completion (-o default) takes over
  });

  itBash('shows descriptions beside several candidates, inserts a single one as it is', () => {
    const several = tab('meshctl completion ', described);
    expect(several).toContain('fish        (Prints the fish completion script.)');
    expect(tab('meshctl completion fi', described)).toEqual(['fish']);
  });
});

describe('the other scripts', () => {
  (has('zsh') ? it : it.skip)('zsh: passes a syntax check and registers with compdef', async () => {
    const file = await script(meshctl, 'zsh');
    expect(spawnSync('zsh', ['-n', file]).status).toBe(0);
    const r = spawnSync('zsh', ['-c', `autoload -U compinit; compinit -u -D; source ${file}; print -r -- \${_comps[meshctl]}`], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe('__meshctl_complete');
  });

  (has('fish') ? it : it.skip)('fish: passes a syntax check', async () => {
    expect(spawnSync('fish', ['-n', await script(meshctl, 'fish')]).status).toBe(0);
  });

  (has('pwsh') ? it : it.skip)('powershell: parses', async () => {
    const file = await script(meshctl, 'powershell');
    const r = spawnSync('pwsh', ['-NoProfile', '-Command', `$e = $null; [void][System.Management.Automation.Language.Parser]::ParseFile("${file}", [ref]$null, [ref]$e); if ($e.Count) { $e; exit 1 }`]);
    expect(r.status).toBe(0);
  });

  it.each(['bash', 'zsh', 'fish', 'powershell'])('%s: asks the program, with or without descriptions', async (shell) => {
    const text = fs.readFileSync(await script(meshctl, shell), 'utf8');
    expect(text).toContain(' __complete ');
    expect(text).not.toContain('__completeNoDesc');
    expect(fs.readFileSync(await script(meshctl, shell, ['--no-descriptions']), 'utf8')).toContain(' __completeNoDesc ');
    expect(fs.readFileSync(await script(meshDiscovery, shell), 'utf8')).toMatch(/mesh-discovery/);
  });

  it('powershell: brackets balance outside strings', async () => {
    const text = fs.readFileSync(await script(meshctl, 'powershell'), 'utf8');
    const code = text.replace(/^#.*$/gm, '').replace(/"(?:[^"`]|`.)*"/g, '""').replace(/'(?:[^']|'')*'/g, "''");
    for (const [open, close] of [['{', '}'], ['(', ')'], ['[', ']']]) expect(code.split(open).length).toBe(code.split(close).length);
  });
});
