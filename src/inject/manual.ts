/**
 * Manual injection (`meshctl cluster-inject`, `meshctl x cluster-uninject`): the injector's inputs
 * from files or from the mesh namespace's ConfigMaps, and YAML streams injected (or uninjected) with
 * exactly the code the webhook runs (./workloads.ts → ./admission.ts `decideInjection`).
 *
 * Where the inputs come from, per piece:
 *   config and values  --injectConfigFile / --valuesFile, else the ConfigMap `mesh-sidecar-injector`
 *                      of the revision the mutating webhook configuration serves (`--webhookConfig`,
 *                      default `mesh-sidecar-injector`, or `mesh-sidecar-injector-<revision>` with
 *                      `--revision`), keys `config` and `values`
 *   mesh config        --meshConfigFile, else the ConfigMap `--meshConfigMapName` (default `mesh`), key `mesh`
 *   native sidecars    the cluster's version when one is asked (else containers, unless
 *                      values.global.nativeSidecar says otherwise)
 * A missing ConfigMap, an unknown revision or a file that does not parse is a ManualInjectionError
 * naming it.
 */
import type { KubeClient } from '../kube/client.js';
import { MeshConfigSchema } from '../gen/config/schemas.js';
import { parseYamlDocument } from '../config/yaml-document.js';
import { REVISION_LABEL, DEFAULT_REVISION_LABEL_VALUE } from '../install/labels.js';
import { MWC_API_VERSION, MWC_KIND, TAG_LABEL, revisionWebhookName, type WebhookConfig } from '../install/tags.js';
import { parseYamlDocuments, toYamlDocuments } from '../install/yaml-io.js';
import { DEFAULT_INJECTOR_CONFIG, InjectionConfigError, parseInjectionValues, parseInjectorConfig, type InjectionInputs, type MeshView } from './config.js';
import { injectorConfigMapName, supportsNativeSidecars } from './source.js';
import { DocumentError, injectDocuments, uninjectDocuments, type DocumentResult } from './workloads.js';

/** A problem the user fixes (a file, a ConfigMap, a revision); printed as is, exit code 1. */
export class ManualInjectionError extends Error {
  override readonly name = 'ManualInjectionError';
  readonly exitCode = 1;
}

/** The daemon's defaults of the settings the ConfigMaps do not carry (docs/spec: --domain, ENABLE_LEGACY_FSGROUP_INJECTION, REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION). */
export const WEBHOOK_DEFAULTS = Object.freeze({ domain: 'cluster.local', legacyFsGroup: true, probeLocalhost: false });

export const DEFAULT_WEBHOOK_CONFIG = 'mesh-sidecar-injector';
export const DEFAULT_MESH_CONFIGMAP = 'mesh';

export interface InputSources {
  /** Texts of the files given (each replaces its ConfigMap key). */
  readonly injectConfig?: { readonly text: string; readonly origin: string };
  readonly values?: { readonly text: string; readonly origin: string };
  readonly meshConfig?: { readonly text: string; readonly origin: string };
  readonly meshNamespace: string;
  readonly meshConfigMapName?: string;
  readonly revision?: string;
  /** The mutating webhook configuration whose revision's ConfigMap is read (default: the revision's). */
  readonly webhookConfig?: string;
}

interface ConfigMap {
  readonly data?: Record<string, string>;
}

/** Whether `sources` needs a cluster (some piece has no file). */
export function needsCluster(s: InputSources): boolean {
  return !s.injectConfig || !s.values || !s.meshConfig;
}

function configError(err: unknown): never {
  if (err instanceof InjectionConfigError) throw new ManualInjectionError(err.message);
  if (err instanceof Error && typeof (err as { exitCode?: unknown }).exitCode === 'number') throw new ManualInjectionError(err.message);
  throw err;
}

/** The revision the webhook configuration serves, checked against `--revision`; throws when it does not exist. */
async function webhookRevision(client: KubeClient, s: InputSources): Promise<{ revision: string; webhook: string }> {
  const named = s.webhookConfig && s.webhookConfig !== DEFAULT_WEBHOOK_CONFIG ? s.webhookConfig : undefined;
  const wanted = s.revision && s.revision !== DEFAULT_REVISION_LABEL_VALUE ? s.revision : undefined;
  const webhook = named ?? (wanted ? revisionWebhookName(wanted) : DEFAULT_WEBHOOK_CONFIG);
  const hook = await client.find<WebhookConfig>({ apiVersion: MWC_API_VERSION, kind: MWC_KIND, name: webhook });
  if (!hook) {
    const installed = (await client.list<WebhookConfig>(MWC_API_VERSION, MWC_KIND)).items
      .filter((w) => (w.metadata?.name ?? '').startsWith(DEFAULT_WEBHOOK_CONFIG) && w.metadata?.labels?.[TAG_LABEL] === undefined)
      .map((w) => w.metadata?.labels?.[REVISION_LABEL] ?? DEFAULT_REVISION_LABEL_VALUE);
    const what = wanted && !named ? `revision "${wanted}" is not installed: ` : '';
    throw new ManualInjectionError(
      `${what}no MutatingWebhookConfiguration ${webhook} (installed revisions: ${installed.length ? [...new Set(installed)].sort().join(', ') : 'none'}); pass --revision or --webhookConfig of an installed one, or --injectConfigFile and --valuesFile`,
    );
  }
  const labelled = hook.metadata?.labels?.[REVISION_LABEL];
  const revision = labelled && labelled !== DEFAULT_REVISION_LABEL_VALUE ? labelled : named ? DEFAULT_REVISION_LABEL_VALUE : (wanted ?? DEFAULT_REVISION_LABEL_VALUE);
  if (wanted && named && revision !== wanted) {
    throw new ManualInjectionError(`--webhookConfig ${webhook} serves revision "${revision}", not --revision "${wanted}"`);
  }
  return { revision, webhook };
}

async function configMapKey(client: KubeClient, namespace: string, name: string, key: string, why: string): Promise<string | undefined> {
  const cm = await client.find<ConfigMap & { metadata?: { name?: string } }>({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name });
  if (!cm) throw new ManualInjectionError(`the ConfigMap ${namespace}/${name} does not exist (${why}); install the mesh, pass --meshNamespace, or give the file instead`);
  return cm.data?.[key];
}

/** The injector's inputs from files and, for what no file gives, from the cluster. */
export async function loadInjectionInputs(s: InputSources, client: KubeClient | undefined): Promise<InjectionInputs> {
  if (needsCluster(s) && !client) throw new ManualInjectionError('a cluster is needed for the pieces no file gives (--injectConfigFile, --valuesFile, --meshConfigFile)');
  let revision = s.revision || DEFAULT_REVISION_LABEL_VALUE;
  let configText = s.injectConfig;
  let valuesText = s.values;
  if (client && (!configText || !valuesText)) {
    const hook = await webhookRevision(client, s);
    revision = hook.revision;
    const name = injectorConfigMapName(revision);
    const why = `the injector of revision "${revision}", served by ${hook.webhook}`;
    const where = `ConfigMap ${s.meshNamespace}/${name}`;
    if (!configText) {
      const text = await configMapKey(client, s.meshNamespace, name, 'config', why);
      if (text !== undefined) configText = { text, origin: `${where} key config` };
    }
    if (!valuesText) {
      const text = await configMapKey(client, s.meshNamespace, name, 'values', why);
      if (text !== undefined) valuesText = { text, origin: `${where} key values` };
    }
  }
  let mesh: MeshView;
  try {
    let meshText = s.meshConfig;
    if (!meshText && client) {
      const name = s.meshConfigMapName || DEFAULT_MESH_CONFIGMAP;
      const text = await configMapKey(client, s.meshNamespace, name, 'mesh', 'the mesh config');
      meshText = { text: text ?? '', origin: `ConfigMap ${s.meshNamespace}/${name} key mesh` };
    }
    const mc = parseYamlDocument(meshText?.text ?? '', meshText?.origin ?? 'mesh config', MeshConfigSchema);
    mesh = { trustDomain: mc.trustDomain || 'cluster.local', ...(mc.defaultConfig ? { defaultConfig: mc.defaultConfig } : {}) };
  } catch (err) {
    configError(err);
  }
  let native = false;
  if (client) {
    const v = await client.request<{ gitVersion?: string }>({ method: 'GET', path: '/version', timeoutMs: 10_000 });
    native = supportsNativeSidecars(v.gitVersion);
  }
  try {
    return {
      config: configText ? parseInjectorConfig(configText.text, configText.origin) : DEFAULT_INJECTOR_CONFIG,
      values: valuesText ? parseInjectionValues(valuesText.text, valuesText.origin) : {},
      mesh,
      revision,
      domain: WEBHOOK_DEFAULTS.domain,
      clusterSupportsNativeSidecars: native,
      probeLocalhost: WEBHOOK_DEFAULTS.probeLocalhost,
      legacyFsGroup: WEBHOOK_DEFAULTS.legacyFsGroup,
    };
  } catch (err) {
    configError(err);
  }
}

export interface StreamResult {
  /** The documents again, as YAML (`---` between them). */
  readonly text: string;
  readonly results: ReadonlyArray<DocumentResult>;
}

function parse(text: string, origin: string): unknown[] {
  try {
    return parseYamlDocuments(text, origin);
  } catch (err) {
    if (err instanceof Error) throw new ManualInjectionError(err.message);
    throw err;
  }
}

function documentsOrError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof DocumentError) throw new ManualInjectionError(err.message);
    throw err;
  }
}

/** Injects every supported document of the YAML stream `text`; other kinds pass through unchanged. */
export function injectStream(text: string, origin: string, inputs: InjectionInputs, defaultNamespace: string): StreamResult {
  const docs = parse(text, origin);
  const r = documentsOrError(() => injectDocuments(docs, inputs, defaultNamespace));
  return { text: toYamlDocuments(r.docs), results: r.results };
}

/** Removes the injector's additions from every supported document of the YAML stream `text`. */
export function uninjectStream(text: string, origin: string, defaultNamespace: string): StreamResult {
  const docs = parse(text, origin);
  const r = documentsOrError(() => uninjectDocuments(docs, defaultNamespace));
  return { text: toYamlDocuments(r.docs), results: r.results };
}
