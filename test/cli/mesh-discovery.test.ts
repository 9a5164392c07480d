import { Command } from 'commander';
import { main } from '../../src/cli/mesh-discovery.js';
import { CliError, boolValue, createCli, runCli } from '../../src/cli/runner.js';
import { ConfigError } from '../../src/util/config-error.js';
import { captureIO } from './capture.js';

async function run(argv: string[], env: Record<string, string> = {}) {
  const c = captureIO(env);
  const code = await main(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

describe('mesh-discovery', () => {
  it('lists its commands', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    for (const cmd of ['discovery', 'request <method> <path> [body]', 'version', 'completion', 'help [command]']) expect(r.stdout).toContain(cmd);
  });

  it.each([[['discovery', '--help']], [['help', 'discovery']]])('%j shows the discovery flags and variables', async (argv) => {
    const r = await run(argv);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--grpcAddr <string>');
    expect(r.stdout).toContain('-n, --namespace <string>');
    expect(r.stdout).toContain('--keepaliveMaxServerConnectionAge <duration>');
    expect(r.stdout).toContain('Environment variables:');
    expect(r.stdout).toContain('DISC_DEBOUNCE_AFTER (duration, default 100ms)');
  });

  it('reports bad discovery flags as `error: <message>` with exit code 1 and no stack', async () => {
    const r = await run(['discovery', '--keepaliveInterval', 'x']);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'error: --keepaliveInterval: invalid duration "x"\n' });
  });

  it('reports bad variables together with bad flags', async () => {
    const r = await run(['discovery', '--log_output_level', 'ads:chatty'], { DISC_DEBOUNCE_AFTER: 'abc' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: DISC_DEBOUNCE_AFTER: invalid duration "abc"; --log_output_level: unknown level "chatty" in "ads:chatty" (levels: debug, info, warn, error, fatal, none)\n',
    );
  });

  it('rejects unknown commands and options', async () => {
    expect((await run(['serve'])).code).toBe(1);
    expect(await run(['discovery', '--grpc-addr', ':1'])).toMatchObject({ code: 1, stderr: expect.stringContaining("unknown option '--grpc-addr'") });
    expect(await run(['help', 'nope'])).toMatchObject({ code: 1, stderr: 'error: unknown command "nope"\n' });
  });
});

describe('runner', () => {
  function program(action: () => unknown) {
    const c = captureIO();
    const cli = createCli(c.io);
    const cmd = new Command('p');
    cmd.command('go').action(cli.action(async () => action() as never));
    return { run: () => runCli(cmd, cli, ['go']), ...c };
  }

  it('writes outcomes and keeps their exit code', async () => {
    const p = program(() => ({ stdout: 'out\n', stderr: 'warn\n', exitCode: 3 }));
    expect(await p.run()).toBe(3);
    expect([p.stdout(), p.stderr()]).toEqual(['out\n', 'warn\n']);
  });

  it('prints user errors without a stack and others with one', async () => {
    const user = program(() => {
      throw new ConfigError(['A: bad', 'B: worse']);
    });
    expect(await user.run()).toBe(1);
    expect(user.stderr()).toBe('error: A: bad; B: worse\n');
    const custom = program(() => {
      throw new CliError('nope', 4);
    });
    expect(await custom.run()).toBe(4);
    const bug = program(() => {
      throw new TypeError('x is undefined');
    });
    expect(await bug.run()).toBe(1);
    expect(bug.stderr()).toMatch(/^error: TypeError: x is undefined\n\s+at /);
  });

  it('reads boolean flag values', () => {
    expect(boolValue(undefined, '--f')).toBe(false);
    expect(boolValue(undefined, '--f', true)).toBe(true);
    expect(boolValue(true, '--f')).toBe(true);
    expect(boolValue('false', '--f', true)).toBe(false);
    expect(boolValue('=0', '-f')).toBe(false);
    expect(() => boolValue('nah', '--f')).toThrow('--f: invalid boolean "nah"');
  });
});
