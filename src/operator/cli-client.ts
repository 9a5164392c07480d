/**
 * Runs a meshctl operator, tag or revision action with a Kubernetes client (built by the caller,
 * src/cli/meshctl/kube.ts) and closes it afterwards. API errors and an unreachable API server
 * become user errors (`error: <message>`, exit code 1) instead of stack traces.
 */
import type { KubeClient } from '../kube/client.js';
import { KubeApiError } from '../kube/errors.js';

export class MeshctlKubeError extends Error {
  readonly exitCode = 1;
  constructor(message: string) {
    super(message);
    this.name = 'MeshctlKubeError';
  }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'EAI_AGAIN']);

export async function withKubeClient<T>(makeClient: () => Promise<KubeClient>, fn: (client: KubeClient) => Promise<T>): Promise<T> {
  const client = await makeClient();
  try {
    return await fn(client);
  } catch (err) {
    if (err instanceof KubeApiError) throw new MeshctlKubeError(`${err.reason}: ${err.apiMessage} (${err.method} ${err.path})`);
    if (NETWORK_CODES.has((err as NodeJS.ErrnoException).code ?? '')) {
      throw new MeshctlKubeError(`cannot reach the Kubernetes API server ${client.server}: ${(err as Error).message}`);
    }
    throw err;
  } finally {
    client.close();
  }
}
