/**
 * `meshctl experimental` (alias `x`, spec part 1): experimental commands. Each subcommand module
 * exports `register(parent, cli)` and is added to EXPERIMENTAL_COMMANDS; keep this a plain list of
 * registrations.
 */
import type { Command } from 'commander';
import type { Cli } from '../../runner.js';
import { registerExperimental as authz } from './authz.js';
import { registerExperimental as clusterUninject } from './cluster-inject.js';
import { register as createRemoteSecret } from './create-remote-secret.js';
import { register as describe } from './describe.js';
import { register as precheck } from './precheck.js';
import { registerExperimental as proxyStatus } from './proxy-status.js';
import { register as xDebug } from './x-debug.js';
import { register as xMetrics } from './x-metrics.js';
import { register as workload } from './workload.js';
import { registerAdd as addToMesh, registerRemove as removeFromMesh } from './mesh-membership.js';
import { register as revision } from './revision.js';
import { register as uninstall } from './uninstall.js';
import type { RegisterCommand } from './types.js';

export const EXPERIMENTAL_COMMANDS: readonly RegisterCommand[] = [addToMesh, authz, clusterUninject, createRemoteSecret, describe, precheck, proxyStatus, removeFromMesh, revision, uninstall, workload, xDebug, xMetrics];

export function register(program: Command, cli: Cli): Command {
  const x = program.command('experimental').alias('x').description('Experimental commands that may be modified or deprecated.');
  for (const add of EXPERIMENTAL_COMMANDS) add(x, cli);
  return x;
}
