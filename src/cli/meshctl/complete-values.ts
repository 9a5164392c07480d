/**
 * What meshctl's dynamic completion (../complete.ts) offers for values the program cannot know by
 * itself:
 *
 *   -n/--namespace, -i/--meshNamespace   namespaces of the cluster
 *   --context                            contexts of the kubeconfig (-c, else KUBECONFIG, else ~/.kube/config)
 *   -r/--revision, x revision describe   revisions of the meshd Deployments (with their tags)
 *   tag remove, x revision tag remove    revision tags
 *   -s/--set profile=…, profile dump, profile diff   profile names (of -d/--manifests when given)
 *   manifest generate --component        component names
 *
 * The cluster is the one the line names (`-c`, `--context`, else the usual kubeconfig lookup), asked
 * with a short timeout; completion.ts's deadline bounds the whole lookup, and any failure offers
 * nothing. The heavy modules load only when a value is asked for.
 */
import type { KubeClient } from '../../kube/client.js';
import type { Candidates, CompletionContext, CompletionProviders, ValueProvider } from '../complete.js';
import { kubeClientFor } from './kube.js';

/** Per request to the API server during completion. */
export const LOOKUP_TIMEOUT_MS = 2_000;

/** A client for the cluster the line names; closed after `fn`. */
async function withCluster(ctx: CompletionContext, fn: (client: KubeClient) => Promise<Candidates>): Promise<Candidates> {
  const client = await kubeClientFor({ clusterconfig: ctx.flags.get('clusterconfig') ?? '', context: ctx.flags.get('context') ?? '' }, ctx.env, { timeoutMs: LOOKUP_TIMEOUT_MS });
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

const namespaces: ValueProvider = (ctx) =>
  withCluster(ctx, async (client) => {
    const list = await client.list('v1', 'Namespace');
    return { values: list.items.map((n) => ({ value: n.metadata?.name ?? '' })).filter((c) => c.value !== '') };
  });

/**
 * The contexts of the kubeconfig files the line would use: `-c`, else every file of KUBECONFIG,
 * else ~/.kube/config. Read as plain YAML: loading the Kubernetes client costs seconds.
 */
const contexts: ValueProvider = async (ctx) => {
  // yaml through our module: a lazy import('yaml') has no named exports in meshctl's bundle.
  const [{ readFile }, path, { yamlParse: parse }] = [await import('node:fs/promises'), await import('node:path'), await import('../../util/yaml.js')];
  const explicit = ctx.flags.get('clusterconfig');
  const fromEnv = (ctx.env.KUBECONFIG ?? '').split(path.delimiter).filter((p) => p !== '');
  const home = ctx.env.HOME;
  const files = explicit ? [explicit] : fromEnv.length > 0 ? fromEnv : home ? [path.join(home, '.kube', 'config')] : [];
  const seen = new Map<string, string>();
  for (const file of files) {
    const doc = parse(await readFile(file, 'utf8').catch(() => '')) as { contexts?: Array<{ name?: unknown; context?: { cluster?: unknown } }> } | null;
    for (const c of doc?.contexts ?? []) {
      if (typeof c.name === 'string' && !seen.has(c.name)) seen.set(c.name, typeof c.context?.cluster === 'string' ? `cluster ${c.context.cluster}` : '');
    }
  }
  return { values: [...seen].map(([value, description]) => ({ value, description })) };
};

/** Revisions of the meshd Deployments in any namespace, each described with the tags pointing at it. */
const revisions: ValueProvider = (ctx) =>
  withCluster(ctx, async (client) => {
    const { REVISION_LABEL, DEFAULT_REVISION_LABEL_VALUE } = await import('../../install/labels.js');
    const [deployments, tags] = await Promise.all([client.list('apps/v1', 'Deployment', { labelSelector: 'app=meshd' }), tagNames(client)]);
    const revs = [...new Set(deployments.items.map((d) => d.metadata?.labels?.[REVISION_LABEL] ?? DEFAULT_REVISION_LABEL_VALUE))].sort();
    return {
      values: revs.map((value) => {
        const own = tags.filter((t) => t.revision === value).map((t) => t.tag);
        return { value, description: own.length > 0 ? `revision (tags: ${own.join(', ')})` : 'revision' };
      }),
    };
  });

/** Tags: the webhook configurations labelled with a tag, and the revision each points at. */
async function tagNames(client: KubeClient): Promise<Array<{ tag: string; revision: string }>> {
  const { REVISION_LABEL, DEFAULT_REVISION_LABEL_VALUE } = await import('../../install/labels.js');
  const { TAG_LABEL, MWC_API_VERSION, MWC_KIND } = await import('../../install/tags.js');
  const list = await client.list(MWC_API_VERSION, MWC_KIND, { labelSelector: TAG_LABEL });
  return list.items
    .map((w) => ({ tag: w.metadata?.labels?.[TAG_LABEL] ?? '', revision: w.metadata?.labels?.[REVISION_LABEL] ?? DEFAULT_REVISION_LABEL_VALUE }))
    .filter((t) => t.tag !== '')
    .sort((a, b) => a.tag.localeCompare(b.tag));
}

const tags: ValueProvider = (ctx) => withCluster(ctx, async (client) => ({ values: (await tagNames(client)).map((t) => ({ value: t.tag, description: `tag of revision ${t.revision}` })) }));

async function profileNames(ctx: CompletionContext): Promise<string[]> {
  const { listProfiles, manifestSource } = await import('../../install/sources.js');
  return listProfiles(await manifestSource(ctx.flags.get('manifests') || ctx.flags.get('charts') || undefined));
}

const profiles: ValueProvider = async (ctx) => ({ values: (await profileNames(ctx)).map((value) => ({ value, description: 'profile' })) });
/** `profile diff` takes a profile name or a MeshOperator file. */
const profilesOrFiles: ValueProvider = async (ctx) => ({ ...(await profiles(ctx)), directive: 0 });

/** `--set`: `profile=<name>` for each profile; other paths are free text. */
const setValues: ValueProvider = async (ctx) => {
  if (!'profile='.startsWith(ctx.toComplete) && !ctx.toComplete.startsWith('profile=')) return { values: [] };
  return { values: (await profileNames(ctx)).map((name) => ({ value: `profile=${name}`, description: 'profile' })) };
};

const components: ValueProvider = async () => {
  const { COMPONENT_NAMES } = await import('../../install/render/index.js');
  return { values: COMPONENT_NAMES.map((value) => ({ value })) };
};

export const MESHCTL_COMPLETION: CompletionProviders = {
  flags: { namespace: namespaces, meshNamespace: namespaces, context: contexts, revision: revisions, set: setValues, component: components },
  args: {
    'profile dump': profiles,
    'profile diff': [profilesOrFiles, profilesOrFiles],
    'experimental revision describe': revisions,
    'tag remove': tags,
    'experimental revision tag remove': tags,
  },
};
