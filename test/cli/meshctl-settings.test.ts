import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildMeshctl, main as meshctl } from '../../src/cli/meshctl.js';
import { globalOptions, type GlobalOptions } from '../../src/cli/meshctl/global-flags.js';
import { createCli, runCli } from '../../src/cli/runner.js';
import { captureIO } from './capture.js';

let home: string;
let configFile: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'meshctl-home-'));
  configFile = path.join(home, '.meshctl', 'config.yaml');
});
afterEach(() => fs.rmSync(home, { recursive: true, force: true }));

function writeConfig(text: string, file = configFile): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

async function run(argv: string[], env: Record<string, string> = {}) {
  const c = captureIO({ HOME: home, ...env });
  const code = await meshctl(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

/** The "settings in effect" table of `meshctl options`: setting → [value, from]. */
async function effective(argv: string[], env: Record<string, string> = {}): Promise<Record<string, [string, string]>> {
  const r = await run(argv, env);
  expect(r).toMatchObject({ code: 0, stderr: '' });
  const table = r.stdout.slice(r.stdout.indexOf('  SETTING'));
  const rows = table
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s{3,}/));
  return Object.fromEntries(rows.map(([name, value, from]) => [name, [value, from]]));
}

describe('meshctl settings: flag > environment > MESHCONFIG > built-in', () => {
  it('uses the built-in defaults when nothing is set (a missing default file is no error)', async () => {
    const s = await effective(['options']);
    expect(s.meshNamespace).toEqual(['"mesh-system"', 'built-in']);
    expect(s['xds-port']).toEqual(['15012', 'built-in']);
    expect(s.insecure).toEqual(['false', 'built-in']);
  });

  it('reads $HOME/.meshctl/config.yaml below the environment, and flags win over both', async () => {
    writeConfig('meshNamespace: from-file\nxds-port: 15013\ninsecure: true\nnamespace: "42"\nvklog: 3\n');
    const fileOnly = await effective(['options']);
    expect(fileOnly.meshNamespace).toEqual(['"from-file"', configFile]);
    expect(fileOnly['xds-port']).toEqual(['15013', configFile]);
    expect(fileOnly.insecure).toEqual(['true', configFile]);
    expect(fileOnly.namespace).toEqual(['"42"', configFile]);
    expect(fileOnly.vklog).toEqual(['3', configFile]);

    const env = { MESHCTL_MESHNAMESPACE: 'from-env', MESHCTL_XDS_PORT: '15014', MESHCTL_INSECURE: 'false' };
    const withEnv = await effective(['options'], env);
    expect(withEnv.meshNamespace).toEqual(['"from-env"', 'MESHCTL_MESHNAMESPACE']);
    expect(withEnv['xds-port']).toEqual(['15014', 'MESHCTL_XDS_PORT']);
    expect(withEnv.insecure).toEqual(['false', 'MESHCTL_INSECURE']);
    expect(withEnv.vklog).toEqual(['3', configFile]);

    // Before or after the command name.
    for (const argv of [['options', '-i', 'from-flag', '--vklog=5'], ['-i', 'from-flag', '--vklog', '5', 'options'], ['--meshNamespace=from-flag', 'options', '--vklog', '5']]) {
      const withFlag = await effective(argv, env);
      expect(withFlag.meshNamespace).toEqual(['"from-flag"', '--meshNamespace']);
      expect(withFlag.vklog).toEqual(['5', '--vklog']);
      expect(withFlag['xds-port']).toEqual(['15014', 'MESHCTL_XDS_PORT']);
    }
  });

  it('treats an empty variable as unset', async () => {
    writeConfig('meshNamespace: from-file\n');
    const s = await effective(['options'], { MESHCTL_MESHNAMESPACE: '', MESHCONFIG: '' });
    expect(s.meshNamespace).toEqual(['"from-file"', configFile]);
  });

  it('reads the file MESHCONFIG names instead of the one in $HOME', async () => {
    writeConfig('meshNamespace: from-home\n');
    const other = path.join(home, 'other.yaml');
    writeConfig('meshNamespace: from-other\ncontext: kind-a\n', other);
    const s = await effective(['options'], { MESHCONFIG: other });
    expect(s.meshNamespace).toEqual(['"from-other"', other]);
    expect(s.context).toEqual(['"kind-a"', other]);
  });

  it('gives commands the resolved values, with a flag a command declares itself winning over the environment', async () => {
    writeConfig('xds-port: 15013\nxds-address: from-file:1\n');
    const seen: GlobalOptions[] = [];
    const c = captureIO({ HOME: home, MESHCTL_XDS_PORT: '15014' });
    const cli = createCli(c.io);
    const program = buildMeshctl(cli);
    program
      .command('probe')
      .option('--xds-port <port>', 'xDS endpoint port.', '15012')
      .action((_opts, cmd) => void seen.push(globalOptions(cmd)));
    expect(await runCli(program, cli, ['probe', '-n', 'prod'])).toBe(0);
    expect(seen[0]).toMatchObject({ xdsPort: 15014, xdsAddress: 'from-file:1', namespace: 'prod', meshNamespace: 'mesh-system' });

    const program2 = buildMeshctl(cli);
    program2
      .command('probe')
      .option('--xds-port <port>', 'xDS endpoint port.', '15012')
      .action((_opts, cmd) => void seen.push(globalOptions(cmd)));
    expect(await runCli(program2, cli, ['probe', '--xds-port', '16000'])).toBe(0);
    expect(seen[1]).toMatchObject({ xdsPort: 16000 });
    expect(await runCli(program2, cli, ['probe', '--xds-port', '0'])).toBe(1);
    expect(c.stderr()).toBe('error: --xds-port: 0 is out of range: must be between 1 and 65535\n');
  });
});

describe('meshctl settings errors', () => {
  it.each([
    ['meshNamespace: [a\n', /^error: MESHCONFIG file (.+): not valid YAML: .+\n$/],
    ['- meshNamespace: a\n', /^error: MESHCONFIG file (.+): must be a mapping of flag names to values, got a list\n$/],
    ['meshNamespace: a\nmeshNamespace: b\n', /^error: MESHCONFIG file (.+): not valid YAML: Map keys must be unique.*\n$/],
  ])('refuses a malformed file %j, naming it', async (text, message) => {
    writeConfig(text);
    const r = await run(['version', '--remote=false']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(configFile);
  });

  it('names every unknown key and bad value of the file', async () => {
    writeConfig('meshNamespce: typo\nxds-port: http\ninsecure: maybe\nvklog: -1\ncontext: [a]\n');
    const r = await run(['options']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: ${[
        `MESHCONFIG file ${configFile}: unknown key "meshNamespce" (known: context, meshNamespace, clusterconfig, namespace, vklog, authority, cert-dir, insecure, plaintext, prefer-experimental, xds-address, xds-port)`,
        `MESHCONFIG file ${configFile}: xds-port: invalid integer "http"`,
        `MESHCONFIG file ${configFile}: insecure: invalid boolean "maybe" (use true or false)`,
        `MESHCONFIG file ${configFile}: vklog: -1 is out of range: must be at least 0`,
        `MESHCONFIG file ${configFile}: context: expected a string, got a list`,
      ].join('; ')}\n`,
    );
  });

  it('requires the file MESHCONFIG names to exist, and to be a file', async () => {
    const missing = path.join(home, 'nope.yaml');
    expect(await run(['options'], { MESHCONFIG: missing })).toEqual({ code: 1, stdout: '', stderr: `error: MESHCONFIG file ${missing}: does not exist\n` });
    expect(await run(['options'], { MESHCONFIG: home })).toEqual({ code: 1, stdout: '', stderr: `error: MESHCONFIG file ${home}: is a directory, not a file\n` });
  });

  it('accepts an empty file', async () => {
    writeConfig('# nothing yet\n');
    expect((await run(['version', '--remote=false', '-s'])).code).toBe(0);
  });

  it('names every bad variable', async () => {
    const r = await run(['version', '--remote=false'], { MESHCTL_XDS_PORT: '15012x', MESHCTL_INSECURE: 'maybe', MESHCTL_PLAINTEXT: 'TRUE' });
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'error: MESHCTL_INSECURE: invalid boolean "maybe" (use true or false); MESHCTL_XDS_PORT: invalid integer "15012x"\n' });
    expect((await run(['options'], { MESHCTL_XDS_PORT: '70000' })).stderr).toBe('error: MESHCTL_XDS_PORT: 70000 is out of range: must be between 1 and 65535\n');
    expect((await run(['options'], { MESHCTL_PREFER_EXPERIMENTAL: 'yes' })).stderr).toBe('error: MESHCTL_PREFER_EXPERIMENTAL: invalid boolean "yes" (use true or false)\n');
  });

  it('checks the global flags', async () => {
    expect((await run(['options', '--vklog=-2'])).stderr).toBe('error: --vklog: -2 is out of range: must be at least 0\n');
  });
});

describe('the xDS connection flags in help', () => {
  it.each([['x', 'proxy-status'], ['x', 'internal-debug'], ['x', 'version']])('%s %s shows --xds-port with its default, 15012', async (...argv) => {
    const c = captureIO({ HOME: home });
    expect(await meshctl([...argv, '--help'], c.io)).toBe(0);
    expect(c.stdout()).toMatch(/--xds-port <port>\s+xDS\s+port\s+of\s+control-plane\s+pods\.\s+\(default:\s+"15012"\)/);
  });
});
