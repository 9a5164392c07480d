/**
 * A Kubernetes client made only when a command first needs one (a command given `--xds-address`
 * and `--plaintext`, or `--file`, runs without any cluster), closed afterwards; API errors and an
 * unreachable API server become user errors as in withKubeClient (../kube.ts).
 */
import type { KubeClient } from '../../../kube/client.js';
import { asUserError, type ClientFactory } from '../kube.js';

export async function withLazyClient<T>(make: ClientFactory, fn: (client: () => Promise<KubeClient>) => Promise<T>): Promise<T> {
  let made: Promise<KubeClient> | undefined;
  const lazy = (): Promise<KubeClient> => (made ??= make());
  try {
    return await fn(lazy);
  } catch (err) {
    const client = made ? await made.catch(() => undefined) : undefined;
    throw client ? asUserError(err, client.server) : err;
  } finally {
    if (made) (await made.catch(() => undefined))?.close();
  }
}
