/**
 * The build stamp (scripts/build-stamp.mjs, run by `npm run build`): revision, Clean/Modified and
 * tag from git, the version from package.json, the build time; `unknown` outside git. The built
 * programs print what the stamp in dist/ says.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { distProgram, type Program } from './dist.js';
import { REPO_ROOT } from './spec-tables.js';

const SCRIPT = path.join(REPO_ROOT, 'scripts/build-stamp.mjs');
const hasGit = spawnSync('git', ['--version']).status === 0;

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stamp-'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '3.2.1' }));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function stamp(env: Record<string, string> = {}): Record<string, string> {
  const out = path.join(dir, 'out', 'build-stamp.json');
  // GIT_CEILING_DIRECTORIES: git must not find a repository above the temporary folder.
  execFileSync(process.execPath, [SCRIPT, '--root', dir, '--out', out], { env: { ...process.env, GIT_CEILING_DIRECTORIES: path.dirname(dir), ...env }, stdio: 'pipe' });
  return JSON.parse(fs.readFileSync(out, 'utf8')) as Record<string, string>;
}

const git = (...args: string[]): string =>
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', ...args], { encoding: 'utf8', stdio: 'pipe' }).trim();

describe('scripts/build-stamp.mjs', () => {
  it('falls back cleanly outside git: version and time, the rest unknown', () => {
    const s = stamp({ SOURCE_DATE_EPOCH: '1700000000' });
    expect(s).toEqual({ version: '3.2.1', revision: 'unknown', status: 'unknown', tag: 'unknown', buildTime: '2023-11-14T22:13:20Z' });
  });

  (hasGit ? it : it.skip)('stamps the revision, Clean or Modified, and the tag', () => {
    fs.writeFileSync(path.join(dir, '.gitignore'), 'out/\n'); // as dist/ is ignored in the project
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'first');
    const head = git('rev-parse', 'HEAD');
    expect(stamp()).toMatchObject({ version: '3.2.1', revision: head, status: 'Clean', tag: 'unknown' });
    expect(stamp().buildTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    git('tag', 'v3.2.1');
    expect(stamp()).toMatchObject({ revision: head, status: 'Clean', tag: 'v3.2.1' });
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '3.2.2' }));
    expect(stamp()).toMatchObject({ version: '3.2.2', revision: head, status: 'Modified' });
  });
});

describe('the built programs', () => {
  const file = path.join(REPO_ROOT, 'dist/version/build-stamp.json');

  it('has the same stamp beside the compiled modules and beside the bundle', () => {
    const bundled = path.join(REPO_ROOT, 'dist/bin/build-stamp.json');
    expect(fs.existsSync(bundled)).toBe(true);
    expect(fs.readFileSync(bundled, 'utf8')).toBe(fs.readFileSync(file, 'utf8'));
  });

  it.each(['meshctl', 'meshctl-bundle', 'mesh-discovery', 'mesh-operator'] as Program[])('%s version prints the stamp of dist/', (program) => {
    if (!fs.existsSync(file)) throw new Error('dist/version/build-stamp.json is missing: run `npm run build` (it writes the stamp)');
    const expected = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
    const args = program.startsWith('meshctl') ? ['version', '--remote=false'] : ['version'];
    const json = spawnSync(process.execPath, [distProgram(program), ...args, '-o', 'json'], { encoding: 'utf8' });
    expect(JSON.parse(json.stdout).clientVersion).toEqual({ ...expected, nodeVersion: process.version });
    const line = spawnSync(process.execPath, [distProgram(program), ...args], { encoding: 'utf8' }).stdout;
    expect(line).toBe(`${expected.version} (revision ${expected.revision}, status ${expected.status}, tag ${expected.tag}, built ${expected.buildTime}, node ${process.version})\n`);
    expect(line).not.toContain('revision unknown');
  });
});
