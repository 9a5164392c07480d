/**
 * The Kubernetes client of a meshctl command, built from the global flags `--clusterconfig/-c`
 * (a kubeconfig file; else KUBECONFIG, in-cluster, ~/.kube/config, see src/kube/kubeconfig.ts) and
 * `--context`; `--vklog` 6 and up logs its requests to standard error (kube-log.ts). Every command
 * that talks to a cluster builds its client here; the client module is imported only when a
 * command needs it, so start-up stays fast. A configuration problem is a user error
 * (`error: <message>`, exit code 1).
 */
import type { KubeClient } from '../../kube/client.js';
import { CliError } from '../runner.js';
import type { GlobalOptions } from './global-flags.js';
import { kubeRequestLog } from './kube-log.js';

export interface KubeClientTuning {
  /** Whole-request timeout (default: the client's, 60 s). */
  readonly timeoutMs?: number;
}

export async function kubeClientFor(
  globals: Pick<GlobalOptions, 'context' | 'clusterconfig'> & Partial<Pick<GlobalOptions, 'vklog' | 'diagnostics'>>,
  env: Readonly<Record<string, string | undefined>> = process.env,
  tuning: KubeClientTuning = {},
): Promise<KubeClient> {
  const { KubeClient: Client, KubeConfigError } = await import('../../kube/client.js');
  const log = kubeRequestLog(globals.vklog ?? 0, globals.diagnostics ?? (() => undefined));
  try {
    return Client.create({
      kubeconfig: globals.clusterconfig || undefined,
      context: globals.context || undefined,
      env,
      userAgent: 'meshctl',
      timeoutMs: tuning.timeoutMs,
      ...log,
    }).client;
  } catch (err) {
    if (err instanceof KubeConfigError) throw new CliError(`cannot load the cluster configuration: ${err.message}`);
    if (err instanceof Error && err.message.startsWith('kubeconfig:')) throw new CliError(err.message);
    throw err;
  }
}
