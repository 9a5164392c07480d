/**
 * Finds and loads the Kubernetes client configuration, in this order:
 *   1. an explicit kubeconfig path (the daemon's `--clusterconfig`),
 *   2. the files of KUBECONFIG (colon-separated; merged, the first file's current context wins),
 *   3. the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT and the mounted token),
 *   4. ~/.kube/config.
 * When none applies, the error names every place that was tried. A kubeconfig given as text
 * (`kubeconfigText`, e.g. from a remote-cluster Secret) replaces all of these.
 */
import { accessSync, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { isIPv6 } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';

/**
 * client-node is loaded on first use: importing it costs about 25 MB of heap and 45 MB of RSS, which
 * a daemon on file config (no cluster) and most meshctl commands never need (docs/adr/0130).
 */
type ClientNode = typeof import('@kubernetes/client-node');
let clientNode: Promise<ClientNode> | undefined;
function loadClientNode(): Promise<ClientNode> {
  return (clientNode ??= import('@kubernetes/client-node'));
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadKubeConfigOptions {
  /** Explicit kubeconfig file; when given nothing else is tried. */
  readonly kubeconfig?: string;
  /** Kubeconfig content (YAML or JSON); when given nothing else is tried. */
  readonly kubeconfigText?: string;
  /** How `kubeconfigText` is named in messages and `source` (default `kubeconfig text`). */
  readonly textSource?: string;
  /** Context to use instead of the file's current-context. */
  readonly context?: string;
  /** Environment to read KUBECONFIG and KUBERNETES_SERVICE_* from (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Home directory for ~/.kube/config (default os.homedir()). */
  readonly homeDir?: string;
  /** Where the service account token, CA and namespace are mounted (default the standard path). */
  readonly serviceAccountDir?: string;
}

export interface LoadedKubeConfig {
  readonly config: KubeConfig;
  /** Where the configuration came from, for logs: a path, `KUBECONFIG=...` or `in-cluster`. */
  readonly source: string;
  /** The API server URL of the chosen context. */
  readonly server: string;
  readonly context: string;
  /** Namespace of the context (in-cluster: the pod's namespace), if any. */
  readonly namespace?: string;
}

export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

function readable(path: string): boolean {
  try {
    accessSync(path);
    return true;
  } catch {
    return false;
  }
}

function loadFile(KubeConfig: ClientNode['KubeConfig'], path: string, what: string): KubeConfig {
  if (!existsSync(path)) throw new KubeConfigError(`${what} ${path} does not exist`);
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(path);
  } catch (err) {
    throw new KubeConfigError(`${what} ${path} cannot be loaded: ${(err as Error).message}`);
  }
  return kc;
}

function loadText(KubeConfig: ClientNode['KubeConfig'], text: string, source: string): KubeConfig {
  if (text.trim() === '') throw new KubeConfigError(`${source}: empty`);
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (err) {
    throw new KubeConfigError(`${source} cannot be loaded: ${(err as Error).message}`);
  }
  return kc;
}

function inCluster(KubeConfig: ClientNode['KubeConfig'], env: Readonly<Record<string, string | undefined>>, dir: string): KubeConfig | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  const tokenFile = join(dir, 'token');
  if (!host || !port || !readable(tokenFile)) return undefined;
  const namespaceFile = join(dir, 'namespace');
  const namespace = readable(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'in-cluster', server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`, caFile: join(dir, 'ca.crt'), skipTLSVerify: false }],
    // The token file is read again on every request, so a rotated token is picked up.
    users: [{ name: 'in-cluster', authProvider: { name: 'tokenFile', config: { tokenFile } } }],
    contexts: [{ name: 'in-cluster', cluster: 'in-cluster', user: 'in-cluster', namespace }],
    currentContext: 'in-cluster',
  });
  return kc;
}

function finish(kc: KubeConfig, source: string, context: string | undefined): LoadedKubeConfig {
  if (context !== undefined && context !== '') {
    if (!kc.getContextObject(context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new KubeConfigError(`${source}: no context "${context}" (known: ${known.length ? known.join(', ') : 'none'})`);
    }
    kc.setCurrentContext(context);
  }
  const current = kc.getCurrentContext();
  if (!current) throw new KubeConfigError(`${source}: no current-context is set and no context was given`);
  const ctx = kc.getContextObject(current);
  if (!ctx) throw new KubeConfigError(`${source}: current-context "${current}" is not defined`);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeConfigError(`${source}: context "${current}" names cluster "${ctx.cluster}", which is not defined`);
  if (!cluster.server) throw new KubeConfigError(`${source}: cluster "${cluster.name}" has no server`);
  if (!kc.getCurrentUser()) throw new KubeConfigError(`${source}: context "${current}" names user "${ctx.user}", which is not defined`);
  return { config: kc, source, server: cluster.server, context: current, namespace: ctx.namespace };
}

/** Loads the client configuration (see the module comment for the order). */
export async function loadKubeConfig(options: LoadKubeConfigOptions = {}): Promise<LoadedKubeConfig> {
  const { KubeConfig } = await loadClientNode();
  const env = options.env ?? process.env;
  if (options.kubeconfigText !== undefined) {
    return finish(loadText(KubeConfig, options.kubeconfigText, options.textSource ?? 'kubeconfig text'), options.textSource ?? 'kubeconfig text', options.context);
  }
  if (options.kubeconfig) {
    return finish(loadFile(KubeConfig, options.kubeconfig, 'kubeconfig'), options.kubeconfig, options.context);
  }
  const tried: string[] = [];
  const list = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  if (list.length > 0) {
    const present = list.filter((p) => existsSync(p));
    if (present.length === 0) throw new KubeConfigError(`KUBECONFIG=${env.KUBECONFIG}: none of its files exists`);
    const kc = loadFile(KubeConfig, present[0], 'KUBECONFIG file');
    for (const path of present.slice(1)) kc.mergeConfig(loadFile(KubeConfig, path, 'KUBECONFIG file'), true);
    return finish(kc, `KUBECONFIG=${present.join(delimiter)}`, options.context);
  }
  tried.push('no kubeconfig path given', 'KUBECONFIG is not set');
  const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const cluster = inCluster(KubeConfig, env, saDir);
  if (cluster) return finish(cluster, 'in-cluster', options.context);
  tried.push(
    env.KUBERNETES_SERVICE_HOST
      ? `in-cluster: no readable token at ${join(saDir, 'token')}`
      : 'not in a cluster (KUBERNETES_SERVICE_HOST is not set)',
  );
  const home = options.homeDir ?? homedir();
  const fallback = join(home, '.kube', 'config');
  if (existsSync(fallback)) return finish(loadFile(KubeConfig, fallback, 'kubeconfig'), fallback, options.context);
  tried.push(`${fallback} does not exist`);
  throw new KubeConfigError(`no Kubernetes client configuration found: ${tried.join('; ')}`);
}
