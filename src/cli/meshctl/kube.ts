/**
 * The Kubernetes client of a meshctl command, built from the global flags `--clusterconfig/-c`
 * (a kubeconfig file; else KUBECONFIG, in-cluster, ~/.kube/config, see src/kube/kubeconfig.ts) and
 * `--context`; `--vklog` 6 and up logs its requests to standard error (kube-log.ts). Every command
 * that talks to a cluster builds its client here; the client module is imported only when a
 * command needs it, so start-up stays fast. A configuration problem is a user error
 * (`error: <message>`, exit code 1).
 *
 * `withKubeClient` runs an action with a client and closes it afterwards; API errors and an
 * unreachable API server become user errors instead of stack traces.
 */
import type { KubeClient } from '../../kube/client.js';
import { KubeApiError, KubeUnreachableError } from '../../kube/errors.js';
import { CliError, unreachableMessage } from '../runner.js';
import type { GlobalOptions } from './global-flags.js';
import { kubeRequestLog } from './kube-log.js';

export interface KubeClientTuning {
  /** Whole-request timeout (default: the client's, 60 s). */
  readonly timeoutMs?: number;
}

/** Builds the Kubernetes client of the global flags when a command needs one. */
export type ClientFactory = () => Promise<KubeClient>;

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'EAI_AGAIN']);

export async function withKubeClient<T>(makeClient: ClientFactory, fn: (client: KubeClient) => Promise<T>): Promise<T> {
  const client = await makeClient();
  try {
    return await fn(client);
  } catch (err) {
    throw asUserError(err, client.server);
  } finally {
    client.close();
  }
}

/** An API error or an unreachable API server `server` as a CliError; anything else as it is. */
export function asUserError(err: unknown, server: string): unknown {
  if (err instanceof KubeApiError) return new CliError(`${err.reason}: ${err.apiMessage} (${err.method} ${err.path})`);
  if (err instanceof KubeUnreachableError) return new CliError(unreachableMessage(err));
  if (NETWORK_CODES.has((err as NodeJS.ErrnoException).code ?? '')) return new CliError(`cannot reach the Kubernetes API server ${server}: ${(err as Error).message}`);
  return err;
}

export async function kubeClientFor(
  globals: Pick<GlobalOptions, 'context' | 'clusterconfig'> & Partial<Pick<GlobalOptions, 'vklog' | 'diagnostics'>>,
  env: Readonly<Record<string, string | undefined>> = process.env,
  tuning: KubeClientTuning = {},
): Promise<KubeClient> {
  const { KubeClient: Client, KubeConfigError } = await import('../../kube/client.js');
  const log = kubeRequestLog(globals.vklog ?? 0, globals.diagnostics ?? (() => undefined));
  try {
    return (await Client.create({
      kubeconfig: globals.clusterconfig || undefined,
      context: globals.context || undefined,
      env,
      userAgent: 'meshctl',
      timeoutMs: tuning.timeoutMs,
      ...log,
    })).client;
  } catch (err) {
    if (err instanceof KubeConfigError) throw new CliError(`cannot load the cluster configuration: ${err.message}`);
    if (err instanceof Error && err.message.startsWith('kubeconfig:')) throw new CliError(err.message);
    throw err;
  }
}
