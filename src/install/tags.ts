/**
 * Revision tags (spec part 1 "revision tag", part 2 "tag"): a tag T is a mutable alias of a
 * control-plane revision R for injection. It is one MutatingWebhookConfiguration
 * `mesh-revision-tag-T` (or `--webhook-name`) labelled `mesh.io/tag: T` and `mesh.io/rev: R`,
 * whose webhooks send pods to R's injector, copied from R's installed webhook configuration
 * `mesh-sidecar-injector[-R]` (client config with its CA bundle, rules, policies), with selectors
 * that match `mesh.io/rev=T` instead of R:
 *   - pods of namespaces labelled `mesh.io/rev=T` (and not `mesh-injection`), unless the pod says
 *     `sidecar.mesh.io/inject: "false"`;
 *   - pods labelled `mesh.io/rev=T` in namespaces that carry neither label.
 * The copy carries none of the installation's ownership labels, so pruning or uninstalling the
 * revision never deletes a tag; removing a tag is explicit (`tag remove`).
 *
 * Rules: a tag is a DNS label and not the name of an installed revision (a namespace labelled
 * with it would be injected twice); `set` refuses a revision that is not installed; repointing an
 * existing tag to another revision needs `--overwrite`; `remove` refuses a tag that labelled
 * namespaces still use unless `-y`.
 */
import type { KubeClient } from '../kube/client.js';
import { isNotFound } from '../kube/errors.js';
import type { KubeObject } from '../kube/types.js';
import type { K8sObject } from './render/types.js';
import { outsideSystemNamespaces } from './render/webhooks.js';
import { DEFAULT_REVISION_LABEL_VALUE, INJECTION_NAMESPACE_LABEL, INJECT_POD_LABEL, REVISION_LABEL } from './labels.js';
import { MESHCTL_FIELD_MANAGER, normalRevision } from './operator-names.js';

export const TAG_LABEL = 'mesh.io/tag';
export const MWC_API_VERSION = 'admissionregistration.k8s.io/v1';
export const MWC_KIND = 'MutatingWebhookConfiguration';
const INJECTOR_BASE = 'mesh-sidecar-injector';

/** A problem with a tag command's input or the cluster's state, for the user. */
export class TagError extends Error {
  readonly exitCode = 1;
  constructor(message: string) {
    super(message);
    this.name = 'TagError';
  }
}

export interface WebhookConfig extends KubeObject {
  readonly metadata?: KubeObject['metadata'];
  readonly webhooks?: ReadonlyArray<Record<string, unknown>>;
}

export interface TagInfo {
  readonly tag: string;
  /** Revision the tag points at (`default` for the default revision). */
  readonly revision: string;
  /** Name of the webhook configuration. */
  readonly webhook: string;
  /** Namespaces labelled `mesh.io/rev=<tag>`, sorted. */
  readonly namespaces: readonly string[];
}

/** `mesh-sidecar-injector` for the default revision, else `mesh-sidecar-injector-<revision>`. */
export function revisionWebhookName(revision: string): string {
  const rev = normalRevision(revision);
  return rev ? `${INJECTOR_BASE}-${rev}` : INJECTOR_BASE;
}

export function tagWebhookName(tag: string): string {
  return `mesh-revision-tag-${tag}`;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function checkTagName(tag: string): void {
  if (!tag) throw new TagError('a revision tag name is required');
  if (tag.length > 63 || !DNS_LABEL.test(tag)) {
    throw new TagError(`revision tag "${tag}" is not a valid name (lower-case letters, digits and "-", at most 63 characters: it is a label value of namespaces)`);
  }
}

type Requirement = { key: string; operator: string; values?: string[] };
const req = (key: string, operator: string, values?: string[]): Requirement => (values ? { key, operator, values } : { key, operator });

/** Fields of the revision's webhook that the tag's webhooks keep. */
const COPIED_FIELDS = ['clientConfig', 'rules', 'failurePolicy', 'matchPolicy', 'sideEffects', 'timeoutSeconds', 'admissionReviewVersions', 'reinvocationPolicy'];

/** The tag's webhook configuration, copied from the revision's injector configuration `source`. */
export function buildTagWebhook(tag: string, revision: string, source: WebhookConfig, webhookName?: string): K8sObject {
  checkTagName(tag);
  const first = source.webhooks?.[0];
  if (!first) throw new TagError(`MutatingWebhookConfiguration ${source.metadata?.name ?? '?'} has no webhooks to copy`);
  const base: Record<string, unknown> = {};
  for (const f of COPIED_FIELDS) if (first[f] !== undefined) base[f] = structuredClone(first[f]);
  const rev = normalRevision(revision);
  const service = (first.clientConfig as { service?: { namespace?: string } } | undefined)?.service;
  const outside = outsideSystemNamespaces(service?.namespace ?? 'mesh-system');
  return {
    apiVersion: MWC_API_VERSION,
    kind: MWC_KIND,
    metadata: {
      name: webhookName || tagWebhookName(tag),
      labels: { [TAG_LABEL]: tag, [REVISION_LABEL]: rev || DEFAULT_REVISION_LABEL_VALUE, app: 'sidecar-injector' },
    },
    webhooks: [
      {
        name: 'rev.namespace.sidecar-injector.mesh.io',
        ...base,
        namespaceSelector: { matchExpressions: [req(REVISION_LABEL, 'In', [tag]), req(INJECTION_NAMESPACE_LABEL, 'DoesNotExist'), outside] },
        objectSelector: { matchExpressions: [req(INJECT_POD_LABEL, 'NotIn', ['false'])] },
      },
      {
        name: 'rev.object.sidecar-injector.mesh.io',
        ...base,
        namespaceSelector: { matchExpressions: [req(REVISION_LABEL, 'DoesNotExist'), req(INJECTION_NAMESPACE_LABEL, 'DoesNotExist'), outside] },
        objectSelector: { matchExpressions: [req(INJECT_POD_LABEL, 'NotIn', ['false']), req(REVISION_LABEL, 'In', [tag])] },
      },
    ],
  };
}

function labelsOf(o: KubeObject): Readonly<Record<string, string>> {
  return o.metadata?.labels ?? {};
}

/** The injector webhook configurations of installed revisions (not tags), by revision (`default` for the default one). */
export async function installedInjectors(client: KubeClient): Promise<Map<string, WebhookConfig>> {
  const list = await client.list<WebhookConfig>(MWC_API_VERSION, MWC_KIND);
  const out = new Map<string, WebhookConfig>();
  for (const w of list.items) {
    const name = w.metadata?.name ?? '';
    if (labelsOf(w)[TAG_LABEL] !== undefined) continue;
    if (name === INJECTOR_BASE) out.set(DEFAULT_REVISION_LABEL_VALUE, w);
    else if (name.startsWith(`${INJECTOR_BASE}-`)) out.set(labelsOf(w)[REVISION_LABEL] ?? name.slice(INJECTOR_BASE.length + 1), w);
  }
  return out;
}

async function namespacesWithRev(client: KubeClient, values: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(values.map((v) => [v, []]));
  if (values.length === 0) return out;
  const list = await client.list('v1', 'Namespace', { labelSelector: `${REVISION_LABEL} in (${values.join(',')})` });
  for (const ns of list.items) {
    const v = labelsOf(ns)[REVISION_LABEL];
    if (v !== undefined) out.get(v)?.push(ns.metadata?.name ?? '');
  }
  for (const names of out.values()) names.sort();
  return out;
}

/** Every tag in the cluster, sorted by name. */
export async function listTags(client: KubeClient): Promise<TagInfo[]> {
  const list = await client.list<WebhookConfig>(MWC_API_VERSION, MWC_KIND, { labelSelector: TAG_LABEL });
  const hooks = list.items.filter((w) => labelsOf(w)[TAG_LABEL]);
  const used = await namespacesWithRev(client, [...new Set(hooks.map((w) => labelsOf(w)[TAG_LABEL]))]);
  return hooks
    .map((w) => {
      const tag = labelsOf(w)[TAG_LABEL];
      return { tag, revision: labelsOf(w)[REVISION_LABEL] ?? DEFAULT_REVISION_LABEL_VALUE, webhook: w.metadata?.name ?? '', namespaces: used.get(tag) ?? [] };
    })
    .sort((a, b) => (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : a.webhook < b.webhook ? -1 : 1));
}

export interface SetTagRequest {
  readonly tag: string;
  /** Target revision; '' or `default` for the default revision. */
  readonly revision: string;
  readonly overwrite?: boolean;
  /** Name of the tag's webhook configuration (default `mesh-revision-tag-<tag>`). */
  readonly webhookName?: string;
}

export interface PreparedTag {
  readonly webhook: K8sObject;
  /** The tag as it was before, if it existed. */
  readonly previous?: TagInfo;
  readonly revision: string;
}

/** Checks a `set`/`generate` request against the cluster and builds the tag's webhook configuration. */
export async function prepareTag(client: KubeClient, r: SetTagRequest): Promise<PreparedTag> {
  checkTagName(r.tag);
  const revision = normalRevision(r.revision) || DEFAULT_REVISION_LABEL_VALUE;
  const injectors = await installedInjectors(client);
  if (r.tag !== DEFAULT_REVISION_LABEL_VALUE && injectors.has(r.tag)) {
    throw new TagError(`revision tag "${r.tag}" has the name of an installed revision; namespaces labelled ${REVISION_LABEL}=${r.tag} would be injected twice: choose another name`);
  }
  const source = injectors.get(revision);
  if (!source) {
    const known = [...injectors.keys()].sort();
    throw new TagError(
      `revision "${revision}" is not installed: no MutatingWebhookConfiguration ${revisionWebhookName(revision)}` +
        (known.length > 0 ? ` (installed revisions: ${known.join(', ')})` : ' (no revision is installed)'),
    );
  }
  const tags = await listTags(client);
  const previous = tags.find((t) => t.tag === r.tag);
  if (previous && previous.revision !== revision && !r.overwrite) {
    throw new TagError(`revision tag "${r.tag}" already points to revision "${previous.revision}"; pass --overwrite to point it to "${revision}"`);
  }
  const webhook = buildTagWebhook(r.tag, revision, source, r.webhookName || previous?.webhook);
  return { webhook, previous, revision };
}

/** Creates or repoints a tag; returns what it did (the previous state is in `prepared.previous`). */
export async function setTag(client: KubeClient, r: SetTagRequest): Promise<PreparedTag> {
  const prepared = await prepareTag(client, r);
  const name = prepared.webhook.metadata.name;
  if (prepared.previous && prepared.previous.webhook !== name) {
    // --webhook-name renamed the tag's configuration: the old one goes.
    await client.delete({ apiVersion: MWC_API_VERSION, kind: MWC_KIND, name: prepared.previous.webhook });
  }
  await client.applyObject(prepared.webhook, { fieldManager: MESHCTL_FIELD_MANAGER, force: true });
  return prepared;
}

export interface RemovedTag {
  readonly tag: string;
  /** Namespaces that were labelled with the tag. */
  readonly namespaces: readonly string[];
}

/** Removes a tag; refuses while namespaces use it unless `yes`. */
export async function removeTag(client: KubeClient, tag: string, opts: { readonly yes?: boolean } = {}): Promise<RemovedTag> {
  checkTagName(tag);
  const found = (await listTags(client)).filter((t) => t.tag === tag);
  if (found.length === 0) throw new TagError(`revision tag "${tag}" does not exist`);
  const namespaces = found[0].namespaces;
  if (namespaces.length > 0 && !opts.yes) {
    throw new TagError(
      `revision tag "${tag}" is used by namespaces ${namespaces.join(', ')}: removing it stops sidecar injection there; pass -y/--skip-confirmation to remove it anyway`,
    );
  }
  for (const t of found) {
    try {
      await client.delete({ apiVersion: MWC_API_VERSION, kind: MWC_KIND, name: t.webhook });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return { tag, namespaces };
}
