/**
 * Help of the four programs: every command has examples, every example parses with the real
 * program (no unknown command, flag or missing argument), and a subcommand's help shows the global
 * flags it accepts.
 */
import { Command, CommanderError } from 'commander';
import { examplesOf } from '../../src/cli/help.js';
import { buildProgram as buildDiscovery } from '../../src/cli/mesh-discovery.js';
import { buildOperatorProgram } from '../../src/cli/mesh-operator.js';
import { buildAgentProgram } from '../../src/cli/mesh-agent.js';
import { buildMeshctl } from '../../src/cli/meshctl.js';
import { createCli, type Cli } from '../../src/cli/runner.js';
import { registerDiscoveryFlags } from '../../src/config/discovery-flags.js';
import { captureIO } from './capture.js';

type Build = (cli: Cli) => Command;

const PROGRAMS: ReadonlyArray<readonly [string, Build]> = [
  ['meshctl', buildMeshctl],
  ['mesh-discovery', buildDiscovery],
  ['mesh-operator', buildOperatorProgram],
  ['mesh-agent', buildAgentProgram],
];

/** The program; `loaded` registers the daemon's flags, which mesh-discovery loads when parsing reaches `discovery`. */
function build(make: Build, loaded = true): Command {
  const program = make(createCli(captureIO().io));
  const discovery = program.commands.find((c) => c.name() === 'discovery');
  if (loaded && program.name() === 'mesh-discovery' && discovery) registerDiscoveryFlags(discovery);
  return program;
}

function commands(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(commands)];
}

const pathOf = (cmd: Command): string => {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
};

/**
 * The argument lists of every run of `prog` in a shell line: words are split as a POSIX shell
 * splits them (quotes removed), and a run ends at a pipe, redirection, `)`, `;` or `&&`.
 */
function invocations(line: string, prog: string): string[][] {
  const segments: string[][] = [[]];
  let word: string | undefined;
  const end = () => {
    if (word !== undefined) segments[segments.length - 1].push(word);
    word = undefined;
  };
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === "'" || ch === '"') {
      const close = line.indexOf(ch, i + 1);
      if (close < 0) throw new Error(`unbalanced quote in ${line}`);
      word = (word ?? '') + line.slice(i + 1, close);
      i = close;
    } else if (/\s/.test(ch)) end();
    else if ('|><();&'.includes(ch)) {
      end();
      // `>` and `|` end a run; so do `<(` (its run starts inside) and `)`.
      segments.push([]);
    } else word = (word ?? '') + ch;
  }
  end();
  return segments.map((s) => s.indexOf(prog) >= 0 ? s.slice(s.indexOf(prog) + 1) : undefined).filter((s): s is string[] => s !== undefined);
}

class Parsed extends Error {
  constructor(readonly command: Command) {
    super('parsed');
  }
}

/** Parses `argv` with the real program; resolves with the command whose action would run, or the error output. */
async function parse(make: Build, argv: string[]): Promise<{ command?: string; error?: string }> {
  const program = build(make, false);
  let error = '';
  for (const cmd of commands(program)) cmd.exitOverride().configureOutput({ writeOut: () => undefined, writeErr: (t) => void (error += t) });
  // Runs after the program's own hooks (which check the global flags), instead of the action.
  program.hook('preAction', (_p, action) => {
    throw new Parsed(action);
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return { error: `nothing ran${error ? `: ${error}` : ''}` };
  } catch (err) {
    if (err instanceof Parsed) return { command: pathOf(err.command) };
    if (err instanceof CommanderError) return { error: error || err.message };
    return { error: (err as Error).message };
  }
}

describe.each(PROGRAMS)('%s help', (name, make) => {
  const program = build(make);
  const all = commands(program).filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);

  it('gives every command examples', () => {
    const missing = all.filter((c) => examplesOf(c).length === 0).map(pathOf);
    expect(missing).toEqual([]);
  });

  it('prints the examples in each command help', () => {
    for (const cmd of all) {
      const c = captureIO();
      cmd.configureOutput({ writeOut: c.io.out, writeErr: c.io.err });
      cmd.outputHelp();
      expect({ cmd: pathOf(cmd), examples: c.stdout().includes('\nExamples:\n  # ') }).toEqual({ cmd: pathOf(cmd), examples: true });
    }
  });

  const cases = all.flatMap((cmd) => examplesOf(cmd).map((e) => [pathOf(cmd), e.command] as const));
  it.each(cases)('%s: example `%s` parses', async (_path, line) => {
    const runs = invocations(line, name);
    expect(runs.length).toBeGreaterThan(0);
    for (const argv of runs) {
      const r = await parse(make, argv);
      expect({ argv, ...r }).toEqual({ argv, command: expect.stringMatching(new RegExp(`^${name}( |$)`)) });
    }
  });
});

describe('example parsing', () => {
  it('finds the runs of a program in a shell line', () => {
    expect(invocations('source <(meshctl completion bash)', 'meshctl')).toEqual([['completion', 'bash']]);
    expect(invocations('meshctl tag set prod -r canary && meshctl tag list', 'meshctl')).toEqual([['tag', 'set', 'prod', '-r', 'canary'], ['tag', 'list']]);
    expect(invocations(`kubectl get vs -o yaml | meshctl validate -f -`, 'meshctl')).toEqual([['validate', '-f', '-']]);
    expect(invocations(`meshctl analyze -S "MESH0102=VirtualService a.b" > out`, 'meshctl')).toEqual([['analyze', '-S', 'MESH0102=VirtualService a.b']]);
  });

  it('fails an example with an unknown flag, command or a missing argument', async () => {
    expect((await parse(buildMeshctl, ['analyze', '--no-such-flag'])).error).toMatch(/unknown option '--no-such-flag'/);
    expect((await parse(buildMeshctl, ['no-such-command'])).error).toMatch(/unknown command 'no-such-command'/);
    expect((await parse(buildMeshctl, ['tag', 'set'])).error).toMatch(/missing required argument 'revision-tag'/);
    expect((await parse(buildMeshctl, ['version', '--vklog=-1'])).error).toMatch(/--vklog: -1 is out of range/);
    expect(await parse(buildMeshctl, ['x', 'revision', 'list', '-o', 'json'])).toEqual({ command: 'meshctl experimental revision list' });
  });
});

describe('subcommand help', () => {
  it('shows the global flags of meshctl', () => {
    const program = build(buildMeshctl);
    const version = program.commands.find((c) => c.name() === 'version')!;
    const help = version.helpInformation();
    expect(help).toMatch(/Global Options:\n(.*\n)*\s+--context <name>/);
    for (const flag of ['-i, --meshNamespace', '-c, --clusterconfig', '-n, --namespace', '--vklog']) expect(help).toContain(flag);
  });

  it('shows the group flags of x revision under its subcommands', () => {
    const program = build(buildMeshctl);
    const list = program.commands.find((c) => c.name() === 'experimental')!.commands.find((c) => c.name() === 'revision')!.commands.find((c) => c.name() === 'list')!;
    expect(list.helpInformation()).toMatch(/Global Options:\n(.*\n)*\s+-o, --output <format>/);
  });
});
