import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { completionTree, SHELLS, type CompletionNode, type Shell } from '../../src/cli/completion.js';
import { buildProgram, main } from '../../src/cli/mesh-discovery.js';
import { main as meshctl } from '../../src/cli/meshctl.js';
import { createCli } from '../../src/cli/runner.js';
import { DISCOVERY_FLAGS, registerDiscoveryFlags } from '../../src/config/discovery-flags.js';
import { captureIO } from './capture.js';

const has = (shell: string) => spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;
const itWith = (shell: string) => (has(shell) ? it : it.skip);

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'completion-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Generates a script through the command line and saves it to a file. */
async function script(shell: Shell, extra: string[] = [], program = main): Promise<{ file: string; text: string }> {
  const c = captureIO();
  expect(await program(['completion', shell, ...extra], c.io)).toBe(0);
  const file = path.join(dir, `${shell}${extra.join('')}.${program === main ? 'md' : 'ctl'}`);
  fs.writeFileSync(file, c.stdout());
  return { file, text: c.stdout() };
}

function sh(shell: string, code: string): string {
  const r = spawnSync(shell, ['-c', code], { encoding: 'utf8', env: { ...process.env, COLUMNS: '200' } });
  if (r.status !== 0) throw new Error(`${shell} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

describe('completionTree', () => {
  it('holds every command and, once loaded, every discovery flag', () => {
    const program = buildProgram(createCli(captureIO().io));
    registerDiscoveryFlags(program.commands.find((c) => c.name() === 'discovery')!);
    const tree = completionTree(program);
    expect(tree.children.map((c) => c.name).sort()).toEqual(['completion', 'discovery', 'help', 'request', 'version']);
    const find = (p: string) => {
      const walk = (n: CompletionNode): CompletionNode | undefined => (n.path === p ? n : n.children.map(walk).find(Boolean));
      return walk(tree);
    };
    const discovery = find('/discovery')!;
    for (const spec of DISCOVERY_FLAGS) expect(discovery.flags.some((f) => f.names.includes(spec.flag))).toBe(true);
    expect(discovery.flags.find((f) => f.names.includes('--registries'))).toMatchObject({ takesValue: true, choices: ['Cluster', 'Mock'] });
    expect(discovery.flags.find((f) => f.names.includes('--profile'))).toMatchObject({ takesValue: false });
    expect(find('/completion')!.children.map((c) => c.name)).toEqual([...SHELLS, 'help']);
    expect(find('/completion/zsh')!.flags.map((f) => f.names[0])).toContain('--no-descriptions');
    expect(find('/version')!.flags.find((f) => f.names.includes('-o'))).toMatchObject({ names: ['-o', '--output'], choices: ['yaml', 'json'] });
  });

  it('passes global flags down to subcommands', async () => {
    const { text } = await script('bash', [], meshctl);
    expect(text).toMatch(/'\/version'\) cmds=''; flags='-o --output -s --short --remote -r --revision -h --help --context -i --meshNamespace -c --clusterconfig -n --namespace --vklog'/);
  });
});

describe('bash', () => {
  itWith('bash')('registers the completion function', async () => {
    const { file } = await script('bash');
    expect(sh('bash', `source ${file}; complete -p mesh-discovery`).trim()).toBe('complete -F _mesh_discovery mesh-discovery');
    const piped = spawnSync('bash', ['-c', `source <(${process.execPath} -e 'process.stdout.write(require("fs").readFileSync(${JSON.stringify(file)}, "utf8"))'); complete -p mesh-discovery`], { encoding: 'utf8' });
    expect(piped.stdout.trim()).toBe('complete -F _mesh_discovery mesh-discovery');
  });

  itWith('bash')('completes commands, flags and flag values', async () => {
    const { file } = await script('bash', ['--no-descriptions']);
    const complete = (words: string[]) =>
      sh(
        'bash',
        `source ${file}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _mesh_discovery; printf '%s\\n' "\${COMPREPLY[@]}"`,
      )
        .split('\n')
        .filter((l) => l !== '');
    expect(complete(['mesh-discovery', ''])).toEqual(['discovery', 'request', 'version', 'completion', 'help']);
    expect(complete(['mesh-discovery', 'ver'])).toEqual(['version']);
    expect(complete(['mesh-discovery', 'version', '--o'])).toEqual(['--output']);
    expect(complete(['mesh-discovery', 'version', '-o', ''])).toEqual(['yaml', 'json']);
    expect(complete(['mesh-discovery', 'completion', 'f'])).toEqual(['fish']);
    expect(complete(['mesh-discovery', 'completion', 'zsh', '--n'])).toEqual(['--no-descriptions']);
    expect(complete(['mesh-discovery', 'discovery', '--log_targ'])).toEqual(['--log_target']);
    expect(complete(['mesh-discovery', 'discovery', '--registries', 'M'])).toEqual(['Mock']);
    // A flag value is skipped when finding the command path; a value without choices completes files.
    expect(complete(['mesh-discovery', 'discovery', '--grpcAddr', ':1', '--reg'])).toEqual(['--registries']);
    expect(complete(['mesh-discovery', 'discovery', '--log_target', ''])).toEqual([]);
  });

  itWith('bash')('shows descriptions beside several candidates only', async () => {
    const { file } = await script('bash');
    const out = sh('bash', `source ${file}; COMP_WORDS=(mesh-discovery completion ''); COMP_CWORD=2; _mesh_discovery; printf '%s\\n' "\${COMPREPLY[@]}"`);
    expect(out).toContain('fish        (Prints the fish completion script.)');
    const one = sh('bash', `source ${file}; COMP_WORDS=(mesh-discovery completion fi); COMP_CWORD=2; _mesh_discovery; printf '%s\\n' "\${COMPREPLY[@]}"`);
    expect(one).toBe('fish\n');
  });
});

describe('zsh', () => {
  itWith('zsh')('passes a syntax check, with and without descriptions', async () => {
    for (const extra of [[], ['--no-descriptions']]) {
      const { file } = await script('zsh', extra);
      sh('zsh', `zsh -n ${file}`);
    }
  });

  itWith('zsh')('registers with compdef', async () => {
    const { file } = await script('zsh');
    expect(sh('zsh', `autoload -U compinit; compinit -u -D; source ${file}; print -r -- \${_comps[mesh-discovery]}`).trim()).toBe('_mesh_discovery');
  });

  itWith('zsh')('offers commands, flags and values', async () => {
    const { file } = await script('zsh');
    // Stand-ins for the completion system's builtins print what would be offered.
    const stubs = `compdef() { :; }
_describe() { print -r -- "describe \${(j:,:)\${(P)4}}"; }
compadd() { print -r -- "compadd \${(j:,:)\${(P)2}}"; }
compset() { :; }
_files() { print -r -- files; }`;
    const complete = (words: string[]) =>
      sh('zsh', `${stubs}\nsource ${file}\nwords=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}; _mesh_discovery`).trim();
    expect(complete(['mesh-discovery', ''])).toBe(
      "describe discovery:Starts the proxy discovery service.,request:Makes one HTTP request to the daemon's metrics/debug endpoint.,version:Prints build version information.,completion:Prints a shell autocompletion script to standard output.,help:display help for command",
    );
    expect(complete(['mesh-discovery', 'version', '-o', ''])).toBe('compadd yaml,json');
    expect(complete(['mesh-discovery', 'version', '--output=j'])).toBe('compadd yaml,json');
    expect(complete(['mesh-discovery', 'discovery', '--log_target', ''])).toBe('files');
    expect(complete(['mesh-discovery', 'completion', 'bash', '-'])).toBe(
      'describe --no-descriptions:Leave descriptions out of the completions.,-h:display help for command,--help:display help for command',
    );
  });
});

describe('fish', () => {
  itWith('fish')('passes a syntax check and completes', async () => {
    const { file } = await script('fish');
    sh('fish', `fish -n ${file}`);
    const complete = (line: string) => sh('fish', `source ${file}; complete -C'${line}'`).trim().split('\n');
    expect(complete('mesh-discovery ')).toEqual([
      'completion\tPrints a shell autocompletion script to standard output.',
      'discovery\tStarts the proxy discovery service.',
      'help\tdisplay help for command',
      "request\tMakes one HTTP request to the daemon's metrics/debug endpoint.",
      'version\tPrints build version information.',
    ]);
    expect(complete('mesh-discovery version --output ')).toEqual(['json\tOne of yaml or json.', 'yaml\tOne of yaml or json.']);
    expect(complete('mesh-discovery discovery --grpcAddr :1 --regis')[0]).toMatch(/^--registries\t/);
  });

  itWith('fish')('leaves descriptions out with --no-descriptions', async () => {
    const { file, text } = await script('fish', ['--no-descriptions']);
    expect(text).not.toMatch(/ -d '/);
    expect(sh('fish', `source ${file}; complete -C'mesh-discovery completion '`).trim().split('\n')).toEqual(['bash', 'fish', 'help', 'powershell', 'zsh']);
  });
});

describe('powershell', () => {
  it('registers a native completer holding the whole tree', async () => {
    const { text } = await script('powershell');
    expect(text).toContain("Register-ArgumentCompleter -Native -CommandName 'mesh-discovery' -ScriptBlock {");
    expect(text).toContain("'/version' = @{  }");
    expect(text).toContain("@{ Name = '--output'; Tip = 'One of yaml or json.'; Value = $true; Choices = @('yaml', 'json') }");
    expect(text).toContain("@{ Name = '--grpcAddr'; Tip = 'Discovery service gRPC address. (default :15010)'; Value = $true; Choices = @() }");
    // Brackets balance outside of single-quoted strings.
    const code = text.replace(/'(?:[^']|'')*'/g, "''").replace(/#.*$/gm, '');
    for (const [open, close] of [['{', '}'], ['(', ')'], ['[', ']']]) {
      expect(code.split(open).length).toBe(code.split(close).length);
    }
    const bare = (await script('powershell', ['--no-descriptions'])).text;
    expect(bare).toContain("@{ Name = '--output'; Tip = '--output'; Value = $true;");
  });

  itWith('pwsh')('parses in PowerShell', async () => {
    const { file } = await script('powershell');
    sh('pwsh', `pwsh -NoProfile -Command '$e = $null; [void][System.Management.Automation.Language.Parser]::ParseFile("${file}", [ref]$null, [ref]$e); if ($e.Count) { $e; exit 1 }'`);
  });
});
