/**
 * Shell completion scripts generated from a commander program tree: subcommands (with aliases),
 * flags (with the flags of ancestor commands, which commander accepts anywhere), the values of
 * flags with a fixed set of choices, and descriptions unless `--no-descriptions` is given.
 *
 * The scripts are static: the tree is written into them, so completing never starts the program.
 * Each walks the words typed so far to find the command path, skipping the values of flags that
 * take one, then offers subcommands, flags, flag values or (for a value without choices) files.
 */
import { Command } from 'commander';
import type { Cli } from './runner.js';

export const SHELLS = ['bash', 'fish', 'powershell', 'zsh'] as const;
export type Shell = (typeof SHELLS)[number];

export interface CompletionFlag {
  /** Every spelling, e.g. `['-o', '--output']`. */
  readonly names: readonly string[];
  readonly description: string;
  /** True when the next word is the flag's value (`--flag <value>`, not `--flag [value]`). */
  readonly takesValue: boolean;
  readonly choices: readonly string[];
}

export interface CompletionNode {
  /** `''` for the program, else `/sub/subsub` with canonical names. */
  readonly path: string;
  readonly name: string;
  readonly aliases: readonly string[];
  readonly description: string;
  readonly flags: readonly CompletionFlag[];
  readonly children: readonly CompletionNode[];
}

export interface CompletionOptions {
  readonly descriptions: boolean;
}

const firstLine = (text: string): string => text.split('\n')[0].replace(/`/g, '').trim();

/** The program's commands and flags as completion data. */
export function completionTree(program: Command): CompletionNode {
  const visit = (cmd: Command, path: string, inherited: readonly CompletionFlag[]): CompletionNode => {
    const help = cmd.createHelp();
    const own = help.visibleOptions(cmd).map(
      (o): CompletionFlag => ({
        names: [o.short, o.long].filter((n): n is string => n !== undefined),
        description: firstLine(o.description),
        takesValue: o.required,
        choices: o.argChoices ?? [],
      }),
    );
    const ownNames = new Set(own.flatMap((f) => f.names));
    const flags = [...own, ...inherited.filter((f) => !f.names.some((n) => ownNames.has(n)))];
    // Help and version flags belong to their own command; the rest apply below it too.
    const passDown = flags.filter((f) => !f.names.includes('--help') && !f.names.includes('--version'));
    return {
      path,
      name: cmd.name(),
      aliases: cmd.aliases(),
      description: firstLine(cmd.summary() || cmd.description()),
      flags,
      children: help.visibleCommands(cmd).map((sub) => visit(sub, `${path}/${sub.name()}`, passDown)),
    };
  };
  return visit(program, '', []);
}

function flatten(node: CompletionNode): CompletionNode[] {
  return [node, ...node.children.flatMap(flatten)];
}

/** Shell-safe identifier derived from the program name (`mesh-discovery` gives `mesh_discovery`). */
const ident = (name: string): string => name.replace(/[^A-Za-z0-9_]/g, '_');

/** Single-quoted for POSIX shells (bash, zsh). */
const sq = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;
/** Single-quoted for fish. */
const fq = (text: string): string => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
/** Single-quoted for PowerShell. */
const pq = (text: string): string => `'${text.replace(/'/g, "''")}'`;

const valueFlags = (node: CompletionNode) => node.flags.filter((f) => f.takesValue);

// ---- bash ------------------------------------------------------------------------------------

function bashScript(root: CompletionNode, opts: CompletionOptions): string {
  const prog = root.name;
  const id = ident(prog);
  const nodes = flatten(root);
  const arms = (lines: string[]) => lines.map((l) => `        ${l}`).join('\n');

  const nodeArms = nodes.map((n) => {
    const cmds = n.children.flatMap((c) => [c.name, ...c.aliases]).join(' ');
    const flags = n.flags.flatMap((f) => f.names).join(' ');
    return `${sq(n.path)}) cmds=${sq(cmds)}; flags=${sq(flags)} ;;`;
  });
  const childArms = nodes.flatMap((n) =>
    n.children.map((c) => `${[c.name, ...c.aliases].map((w) => sq(`${n.path}/${w}`)).join('|')}) next=${sq(c.path)} ;;`),
  );
  const valueArms = nodes.flatMap((n) =>
    valueFlags(n).map((f) => `${f.names.map((name) => sq(`${n.path} ${name}`)).join('|')}) values=${sq(f.choices.join(' '))} ;;`),
  );
  const describeArms = opts.descriptions
    ? nodes.flatMap((n) => [
        ...n.children.filter((c) => c.description).map((c) => `${[c.name, ...c.aliases].map((w) => sq(`${n.path} ${w}`)).join('|')}) desc=${sq(c.description)} ;;`),
        ...n.flags.filter((f) => f.description).map((f) => `${f.names.map((name) => sq(`${n.path} ${name}`)).join('|')}) desc=${sq(f.description)} ;;`),
      ])
    : [];

  const describe = opts.descriptions
    ? `
# Sets desc to the description of word $2 at command path $1.
__${id}_describe() {
    desc=''
    case "$1 $2" in
${arms(describeArms)}
    esac
}
`
    : '';
  const addDescriptions = opts.descriptions
    ? `
    # With several candidates, show each with its description; a single one is inserted as is.
    if ((\${#COMPREPLY[@]} > 1)); then
        local width=0 c line cols=\${COLUMNS:-80}
        for c in "\${COMPREPLY[@]}"; do ((\${#c} > width)) && width=\${#c}; done
        for i in "\${!COMPREPLY[@]}"; do
            c=\${COMPREPLY[i]}
            __${id}_describe "$cmdpath" "$c"
            [[ -z $desc ]] && continue
            printf -v line '%-*s  (%s)' "$width" "$c" "$desc"
            ((\${#line} >= cols)) && line="\${line:0:cols-5}...)"
            COMPREPLY[i]=$line
        done
    fi`
    : '';

  return `# bash completion for ${prog}                                  -*- shell-script -*-
# Generated by \`${prog} completion bash\`. Needs the bash-completion package.
# Load it in the current shell:  source <(${prog} completion bash)

# Sets cmds (subcommands and aliases) and flags for the command path $1.
__${id}_node() {
    cmds='' flags=''
    case "$1" in
${arms(nodeArms)}
    esac
}

# Sets next to the command path of word $2 below command path $1, or to '' if it names none.
__${id}_child() {
    next=''
    case "$1/$2" in
${arms(childArms)}
    esac
}

# Succeeds if flag $2 at command path $1 takes a value; sets values to its choices, if any.
__${id}_values() {
    values=''
    case "$1 $2" in
${arms(valueArms)}
        *) return 1 ;;
    esac
}
${describe}
_${id}() {
    local cur words cword
    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref -n =: cur words cword
    else
        cur=\${COMP_WORDS[COMP_CWORD]}
        words=("\${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    COMPREPLY=()

    local cmdpath='' next cmds flags values desc i w
    for ((i = 1; i < cword; i++)); do
        w=\${words[i]}
        case "$w" in
            -*=*) continue ;;
            -*) __${id}_values "$cmdpath" "$w" && ((i++)); continue ;;
        esac
        __${id}_child "$cmdpath" "$w"
        [[ -n $next ]] && cmdpath=$next
    done

    # The value of a flag: its choices, or files.
    local flag='' prefix=$cur
    if [[ $cur == -*=* ]]; then
        flag=\${cur%%=*}
        prefix=\${cur#*=}
    elif ((cword > 1)) && [[ \${words[cword-1]} == -* ]]; then
        flag=\${words[cword-1]}
    fi
    if [[ -n $flag ]] && __${id}_values "$cmdpath" "$flag"; then
        if [[ -n $values ]]; then
            COMPREPLY=($(compgen -W "$values" -- "$prefix"))
        else
            compopt -o default 2>/dev/null
        fi
        return 0
    fi

    __${id}_node "$cmdpath"
    if [[ $cur == -* || -z $cmds ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
    fi${addDescriptions}
    return 0
}

complete -F _${id} ${prog}
`;
}

// ---- zsh -------------------------------------------------------------------------------------

function zshScript(root: CompletionNode, opts: CompletionOptions): string {
  const prog = root.name;
  const id = ident(prog);
  const nodes = flatten(root);
  const arms = (lines: string[]) => lines.map((l) => `    ${l}`).join('\n');
  const entry = (name: string, description: string) =>
    sq(opts.descriptions && description ? `${name.replace(/:/g, '\\:')}:${description}` : name.replace(/:/g, '\\:'));

  const nodeArms = nodes.map((n) => {
    const cmds = n.children.flatMap((c) => [c.name, ...c.aliases].map((w) => entry(w, c.description)));
    const flags = n.flags.flatMap((f) => f.names.map((name) => entry(name, f.description)));
    return `${sq(n.path)}) cmds=(${cmds.join(' ')}); flags=(${flags.join(' ')}) ;;`;
  });
  const childArms = nodes.flatMap((n) =>
    n.children.map((c) => `${[c.name, ...c.aliases].map((w) => sq(`${n.path}/${w}`)).join('|')}) next=${sq(c.path)} ;;`),
  );
  const valueArms = nodes.flatMap((n) =>
    valueFlags(n).map((f) => `${f.names.map((name) => sq(`${n.path} ${name}`)).join('|')}) values=(${f.choices.map(sq).join(' ')}) ;;`),
  );

  return `#compdef ${prog}
# zsh completion for ${prog}. Generated by \`${prog} completion zsh\`.
# Needs completion enabled (autoload -U compinit && compinit). Load it in the current shell:
#   source <(${prog} completion zsh)
# or save it as _${prog} in a directory of $fpath.

__${id}_node() {
  cmds=() flags=()
  case $1 in
${arms(nodeArms)}
  esac
}

__${id}_child() {
  next=''
  case "$1/$2" in
${arms(childArms)}
  esac
}

__${id}_values() {
  values=()
  case "$1 $2" in
${arms(valueArms)}
    *) return 1 ;;
  esac
}

_${id}() {
  local cmdpath='' next w i cur=\${words[CURRENT]}
  local -a cmds flags values
  for ((i = 2; i < CURRENT; i++)); do
    w=\${words[i]}
    case $w in
      -*=*) continue ;;
      -*) __${id}_values "$cmdpath" "$w" && ((i++)); continue ;;
    esac
    __${id}_child "$cmdpath" "$w"
    [[ -n $next ]] && cmdpath=$next
  done

  if [[ $cur == -*=* ]] && __${id}_values "$cmdpath" "\${cur%%=*}"; then
    compset -P '*='
    if (( \${#values} )); then compadd -a values; else _files; fi
    return
  fi
  if (( CURRENT > 2 )) && [[ \${words[CURRENT-1]} == -* ]] && __${id}_values "$cmdpath" "\${words[CURRENT-1]}"; then
    if (( \${#values} )); then compadd -a values; else _files; fi
    return
  fi

  __${id}_node "$cmdpath"
  if [[ $cur == -* ]] || (( \${#cmds} == 0 )); then
    _describe -t flags 'flag' flags
  else
    _describe -t commands 'command' cmds
  fi
}

if [[ \${funcstack[1]} == _${prog} ]]; then
  _${id} "$@"
else
  compdef _${id} ${prog}
fi
`;
}

// ---- fish ------------------------------------------------------------------------------------

function fishScript(root: CompletionNode, opts: CompletionOptions): string {
  const prog = root.name;
  const id = ident(prog);
  const nodes = flatten(root);
  const desc = (text: string) => (opts.descriptions && text ? ` -d ${fq(text)}` : '');

  const childCases = nodes.flatMap((n) =>
    n.children.map((c) => `        case ${[c.name, ...c.aliases].map((w) => fq(`${n.path}/${w}`)).join(' ')}\n            echo ${fq(c.path)}`),
  );
  const valueCases = nodes
    .filter((n) => valueFlags(n).length > 0)
    .map((n) => `        case ${valueFlags(n).flatMap((f) => f.names.map((name) => fq(`${n.path} ${name}`))).join(' ')}\n            return 0`);

  const lines: string[] = [];
  for (const n of nodes) {
    const when = `-n ${fq(`__${id}_at '${n.path}'`)}`;
    for (const c of n.children) {
      for (const word of [c.name, ...c.aliases]) lines.push(`complete -c ${prog} ${when} -a ${fq(word)}${desc(c.description)}`);
    }
    for (const f of n.flags) {
      const names = f.names
        .map((name) => (name.startsWith('--') ? `-l ${fq(name.slice(2))}` : name.length === 2 ? `-s ${fq(name.slice(1))}` : `-o ${fq(name.slice(1))}`))
        .join(' ');
      const value = !f.takesValue ? '' : f.choices.length > 0 ? ` -x -a ${fq(f.choices.join(' '))}` : ' -r -F';
      lines.push(`complete -c ${prog} ${when} ${names}${value}${desc(f.description)}`);
    }
  }

  return `# fish completion for ${prog}. Generated by \`${prog} completion fish\`.
# Load it in the current shell:  ${prog} completion fish | source

function __${id}_child --argument-names cmdpath word
    switch "$cmdpath/$word"
${childCases.join('\n')}
    end
end

function __${id}_takes_value --argument-names cmdpath flag
    switch "$cmdpath $flag"
${valueCases.join('\n')}
    end
    return 1
end

function __${id}_path
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmdpath ''
    set -l skip 0
    for w in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case '-*=*'
                continue
            case '-*'
                if __${id}_takes_value "$cmdpath" $w
                    set skip 1
                end
                continue
        end
        set -l next (__${id}_child "$cmdpath" $w)
        if test -n "$next"
            set cmdpath $next
        end
    end
    echo $cmdpath
end

function __${id}_at --argument-names target
    set -l current (__${id}_path)
    test "$current" = "$target"
end

complete -c ${prog} -f
${lines.join('\n')}
`;
}

// ---- PowerShell ------------------------------------------------------------------------------

function powershellScript(root: CompletionNode, opts: CompletionOptions): string {
  const prog = root.name;
  const nodes = flatten(root);
  const text = (description: string, fallback: string) => pq(opts.descriptions && description ? description : fallback);

  const children = nodes
    .map((n) => `        ${pq(n.path)} = @{ ${n.children.flatMap((c) => [c.name, ...c.aliases].map((w) => `${pq(w)} = ${pq(c.path)}`)).join('; ')} }`)
    .join('\n');
  const commands = nodes
    .map((n) => {
      const items = n.children.flatMap((c) => [c.name, ...c.aliases].map((w) => `@{ Name = ${pq(w)}; Tip = ${text(c.description, w)} }`));
      return `        ${pq(n.path)} = @(${items.join(', ')})`;
    })
    .join('\n');
  const flags = nodes
    .map((n) => {
      const items = n.flags.flatMap((f) =>
        f.names.map(
          (name) =>
            `@{ Name = ${pq(name)}; Tip = ${text(f.description, name)}; Value = $${f.takesValue}; Choices = @(${f.choices.map(pq).join(', ')}) }`,
        ),
      );
      return `        ${pq(n.path)} = @(${items.join(', ')})`;
    })
    .join('\n');

  return `# PowerShell completion for ${prog}. Generated by \`${prog} completion powershell\`.
# Load it in the current session:  ${prog} completion powershell | Out-String | Invoke-Expression

Register-ArgumentCompleter -Native -CommandName ${pq(prog)} -ScriptBlock {
    param($WordToComplete, $CommandAst, $CursorPosition)

    $children = @{
${children}
    }
    $commands = @{
${commands}
    }
    $flags = @{
${flags}
    }

    # Words before the one being completed; the first is the program.
    $words = @($CommandAst.CommandElements | Where-Object { $_.Extent.EndOffset -lt $CursorPosition } | ForEach-Object { $_.ToString() })
    $cmdpath = ''
    $skip = $false
    for ($i = 1; $i -lt $words.Count; $i++) {
        $w = $words[$i]
        if ($skip) { $skip = $false; continue }
        if ($w.StartsWith('-')) {
            if (-not $w.Contains('=')) {
                $f = @($flags[$cmdpath] | Where-Object { $_.Name -ceq $w })
                if ($f.Count -gt 0 -and $f[0].Value) { $skip = $true }
            }
            continue
        }
        $next = $children[$cmdpath][$w]
        if ($next) { $cmdpath = $next }
    }

    $prefix = $WordToComplete
    $flagName = $null
    if ($WordToComplete -match '^(-[^=]+)=(.*)$') {
        $flagName = $Matches[1]
        $prefix = $Matches[2]
    } elseif ($words.Count -gt 1 -and $words[-1].StartsWith('-')) {
        $flagName = $words[-1]
    }
    if ($flagName) {
        $f = @($flags[$cmdpath] | Where-Object { $_.Name -ceq $flagName -and $_.Value })
        if ($f.Count -gt 0) {
            # Choices, if any; an empty result lets PowerShell complete paths.
            foreach ($c in $f[0].Choices) {
                if ($c.StartsWith($prefix)) {
                    $insert = if ($WordToComplete -ne $prefix) { "$flagName=$c" } else { $c }
                    [System.Management.Automation.CompletionResult]::new($insert, $c, 'ParameterValue', $c)
                }
            }
            return
        }
    }

    $candidates = if ($WordToComplete.StartsWith('-') -or $commands[$cmdpath].Count -eq 0) { $flags[$cmdpath] } else { $commands[$cmdpath] }
    foreach ($c in $candidates) {
        if ($c.Name.StartsWith($WordToComplete)) {
            $kind = if ($c.Name.StartsWith('-')) { 'ParameterName' } else { 'Command' }
            [System.Management.Automation.CompletionResult]::new($c.Name, $c.Name, $kind, $c.Tip)
        }
    }
}
`;
}

const GENERATORS: Readonly<Record<Shell, (root: CompletionNode, opts: CompletionOptions) => string>> = {
  bash: bashScript,
  fish: fishScript,
  powershell: powershellScript,
  zsh: zshScript,
};

/** The completion script of `program` for `shell`. */
export function completionScript(shell: Shell, program: Command, opts: CompletionOptions = { descriptions: true }): string {
  return GENERATORS[shell](completionTree(program), opts);
}

const SHELL_HELP: Readonly<Record<Shell, string>> = {
  bash: 'Prints the bash completion script. It needs the bash-completion package.',
  fish: 'Prints the fish completion script.',
  powershell: 'Prints the PowerShell completion script.',
  zsh: 'Prints the zsh completion script. It needs completion enabled in the shell.',
};

/**
 * Adds `completion <shell>` to `program`. `prepare` runs before a script is generated, for
 * programs that register some flags lazily.
 */
export function registerCompletionCommand(program: Command, cli: Cli, prepare?: () => Promise<void>): Command {
  const completion = program.command('completion').description('Prints a shell autocompletion script to standard output.');
  for (const shell of SHELLS) {
    completion
      .command(shell)
      .description(SHELL_HELP[shell])
      .option('--no-descriptions', 'Leave descriptions out of the completions.')
      .action(
        cli.action(async (opts: { descriptions: boolean }) => {
          await prepare?.();
          return { stdout: completionScript(shell, program, { descriptions: opts.descriptions }) };
        }),
      );
  }
  return completion;
}
