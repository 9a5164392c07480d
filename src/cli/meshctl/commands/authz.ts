/**
 * `meshctl x authz check [<type>/]<name>[.<namespace>]` (spec part 1): the authorization policies a
 * workload's proxy enforces, read from its own configuration (its admin port through a
 * port-forward, or `-f` a saved config dump): per listener and filter chain, in evaluation order,
 * the action, the AuthorizationPolicy and what each rule matches. The rows come from
 * ../diag/authz.ts. `meshctl authz` (top level) only points at the experimental command.
 */
import type { Command } from 'commander';
import { colorEnabled, renderTable } from '../../output.js';
import { CliError, type Cli } from '../../runner.js';
import { parsePodRef } from '../diag/flags.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

export function registerExperimental(parent: Command, cli: Cli): Command {
  const authz = parent.command('authz').description('Inspects the authorization a proxy enforces. Experimental.');
  authz
    .command('check')
    .description('Prints the AuthorizationPolicies a proxy enforces (mesh-, namespace- and workload-level, merged), read from its config: per filter chain the action, the policy and what each rule matches.')
    .argument('[pod]', 'The proxy, as [<type>/]<name>[.<namespace>] (not with --file).')
    .option('-f, --file <file>', 'A config dump (JSON, the admin /config_dump reply) to read instead of a proxy.')
    .action(
      cli.action(async (pod: string | undefined, opts: { file?: string }, self: Command) => {
        const globals = globalOptions(self);
        if (pod !== undefined && opts.file) throw new CliError('give a proxy or --file, not both');
        const ref = pod !== undefined ? parsePodRef(pod, globals.namespace || 'default') : undefined;
        const { loadDump } = await import('../diag/run-proxy-config.js');
        const { authzRows } = await import('../diag/authz.js');
        const { withLazyClient } = await import('../diag/lazy-client.js');
        const dump = await withLazyClient(() => kubeClientFor(globals, cli.io.env), (client) => loadDump({ file: opts.file, ref }, client));
        if (dump.listeners.length === 0) throw new CliError(`${opts.file ?? pod}: the config dump holds no listeners: the proxy has no configuration yet, or this is not its /config_dump`);
        const rows = authzRows(dump);
        if (rows.length === 0) return { stdout: 'No authorization policy applies to this proxy: every chain admits all requests.\n' };
        const table = rows.flatMap((r) =>
          r.matches.map((m, i) => [
            `${r.listener} ${r.chain}`,
            r.protocol,
            r.mode === 'dry-run' ? `${r.action} (dry-run)` : r.action,
            r.policy || '-',
            r.rules[i] !== undefined ? String(r.rules[i]) : '-',
            m,
          ]),
        );
        return { stdout: renderTable(['CHAIN', 'PROTOCOL', 'ACTION', 'POLICY', 'RULE', 'MATCHES'], table, { color: colorEnabled(cli.io) }) };
      }),
    );
  return authz;
}

export function register(program: Command, cli: Cli): Command {
  return program
    .command('authz')
    .description('Experimental: use `meshctl experimental authz`.')
    .allowUnknownOption()
    .allowExcessArguments()
    .action(
      cli.action(() => {
        throw new CliError('authz is experimental: use `meshctl experimental authz check [<type>/]<name>[.<namespace>]`');
      }),
    );
}
