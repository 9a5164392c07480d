import { main as meshctl } from '../../src/cli/meshctl.js';
import { captureIO } from './capture.js';
import { MESHCTL_SPEC_PART1 as PART1, MESHCTL_SPEC_PART2 as PART2, plain, specTable } from './spec-tables.js';

async function options(env: Record<string, string> = {}) {
  const c = captureIO(env);
  const code = await meshctl(['options'], c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

describe('meshctl options', () => {
  it('lists every global flag of the spec with its short form, description and default', async () => {
    const r = await options();
    expect(r.code).toBe(0);
    const flagSection = r.stdout.slice(0, r.stdout.indexOf('Environment variables:'));
    const rows = specTable('### Global flags (accepted by every command)', PART1);
    expect(rows.length).toBe(5);
    for (const [flag, short, , def, meaning] of rows) {
      const line = flagSection.split('\n').find((l) => l.includes(`${plain(flag)} `));
      expect(line).toBeDefined();
      expect(line!.trimStart().startsWith(short ? `${plain(short)}, ${plain(flag)}` : plain(flag))).toBe(true);
      // The spec's meaning starts the same way (the dashboard note is left to dashboard's help).
      expect(line).toContain(meaning.split('. ')[0].replace(/\.$/, ''));
      if (def !== 'empty') expect(line).toMatch(new RegExp(`\\(default "?${plain(def)}"?\\)$`));
      else expect(line).not.toContain('(default');
    }
  });

  it('lists every environment variable of the utility from the spec', async () => {
    const r = await options();
    const envSection = r.stdout.slice(r.stdout.indexOf('Environment variables:'), r.stdout.indexOf('Settings in effect'));
    for (const [name, , def] of specTable('### Environment variables of the utility', PART2)) {
      const line = envSection.split('\n').find((l) => l.trim().startsWith(`${name} `));
      expect(line).toBeDefined();
      if (def !== 'empty' && def !== '') expect(line).toContain(`(default "${plain(def)}")`);
    }
  });

  it('says which MESHCONFIG file it would read', async () => {
    expect((await options({ HOME: '/nowhere' })).stdout).toContain('MESHCONFIG file: /nowhere/.meshctl/config.yaml (not found)');
    expect((await options()).stdout).toContain('MESHCONFIG file: none (MESHCONFIG and HOME are unset)');
  });

  it('uses colour only on a terminal whose TERM is not dumb', async () => {
    const run = async (env: Record<string, string>, isTTY: boolean) => {
      const c = captureIO(env);
      expect(await meshctl(['options'], { ...c.io, isTTY })).toBe(0);
      return c.stdout();
    };
    expect(await run({}, true)).toContain('\u001b[1mSETTING');
    expect(await run({ TERM: 'dumb' }, true)).not.toContain('\u001b[');
    expect(await run({ TERM: 'xterm' }, false)).not.toContain('\u001b[');
  });

  it('is a command completion offers', async () => {
    const c = captureIO();
    expect(await meshctl(['__completeNoDesc', ''], c.io)).toBe(0);
    expect(c.stdout().split('\n')).toEqual(expect.arrayContaining(['options', 'validate', 'version', 'completion']));
    const v = captureIO();
    expect(await meshctl(['__completeNoDesc', 'v', '-'], v.io)).toBe(0); // v is validate's alias
    expect(v.stdout().split('\n')).toEqual(expect.arrayContaining(['--filename', '-f', '--referential', '-x', '--help', '--context', '--meshNamespace']));
  });
});
