/**
 * Validates the documents of one input with the daemon's own code: mesh config documents go
 * through `parseConfigDocuments` (src/config/parse.ts), exactly as a --configDir file does, so a
 * document passes here if and only if the daemon would load it. Each document is first sorted
 * by what it is:
 *
 * - mesh config: an apiVersion group under `mesh.io` (other than the install group), or a
 *   kind named like a mesh kind outside the Kubernetes groups (so a wrong apiVersion is an
 *   error, not a skip), or no apiVersion and kind at all;
 * - a Kubernetes object of workloads.ts's kinds: the checks there;
 * - anything else (ConfigMaps, gateway-api objects, CRDs of other projects, the install
 *   group): skipped, with a note.
 */
import { kindByName } from '../../../config/kinds.js';
import { parseConfigYamlDocuments } from '../../../config/parse.js';
import { isWorldKind } from '../../../analysis/world.js';
import { isRecord } from '../../../util/record.js';
import { readYamlDocuments, yamlValue } from '../../../util/yaml.js';
import type { ConfigObject } from '../../../config/types.js';
import { splitOrigin, type Finding } from './findings.js';
import { WORKLOAD_KINDS, checkWorkload } from './workloads.js';

export interface DocumentsResult {
  /** The valid mesh config objects (their `meta.origin` is `file#n`). */
  readonly objects: ConfigObject[];
  /** What can still be analysed of the refused mesh config objects (see ConfigRejection.salvaged). */
  readonly salvaged: ConfigObject[];
  /** The documents of the Kubernetes kinds the analysis reads (analysis/world.ts), as decoded. */
  readonly kubeObjects: unknown[];
  readonly findings: Finding[];
  /** Documents in the input, empty ones excluded. */
  readonly documents: number;
}

type Route = { readonly type: 'mesh' } | { readonly type: 'workload'; readonly kind: string; readonly doc: Record<string, unknown> } | { readonly type: 'skip'; readonly why: string };

function route(value: unknown): Route {
  if (!isRecord(value)) return { type: 'mesh' }; // parse.ts explains what is wrong
  const kind = typeof value.kind === 'string' ? value.kind : undefined;
  const apiVersion = typeof value.apiVersion === 'string' ? value.apiVersion : undefined;
  const group = apiVersion === undefined ? undefined : apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  if (group !== undefined && (group === 'mesh.io' || group.endsWith('.mesh.io'))) {
    if (group === 'install.mesh.io') return { type: 'skip', why: `${apiVersion} is checked by the install commands, not by validate` };
    return { type: 'mesh' };
  }
  if (kind !== undefined && WORKLOAD_KINDS[kind] !== undefined && (apiVersion === WORKLOAD_KINDS[kind] || apiVersion === undefined)) {
    return { type: 'workload', kind, doc: value };
  }
  const kubeGroup = group !== undefined && (group === '' || group.endsWith('k8s.io') || !group.includes('.'));
  if (kind === undefined || (kindByName(kind) !== undefined && !kubeGroup)) return { type: 'mesh' };
  return { type: 'skip', why: `${apiVersion ?? 'no apiVersion'} ${kind} is not a kind validate checks` };
}

/** Kind, namespace and name of a document, as far as they can be read. */
function identity(value: Record<string, unknown>, defaultNamespace: string): Pick<Finding, 'kind' | 'namespace' | 'name'> {
  const kind = typeof value.kind === 'string' ? value.kind : undefined;
  const meta = isRecord(value.metadata) ? value.metadata : {};
  const name = typeof meta.name === 'string' && meta.name !== '' ? meta.name : undefined;
  const namespace = typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : defaultNamespace;
  return { kind, name, namespace: name === undefined ? undefined : namespace };
}

export function validateDocuments(text: string, file: string, defaultNamespace: string): DocumentsResult {
  // Read once, the way parse.ts reads (src/util/yaml.ts), so document numbers agree.
  const docs = readYamlDocuments(text);
  const kubeObjects: unknown[] = [];
  const routes: (Route | undefined)[] = docs.map((doc) => {
    if (doc.errors.length > 0) return { type: 'mesh' };
    let value: unknown;
    try {
      value = yamlValue(doc);
    } catch {
      return { type: 'mesh' };
    }
    if (isRecord(value) && isWorldKind(value.apiVersion, value.kind)) kubeObjects.push(value);
    return value === null || value === undefined ? undefined : route(value);
  });
  const findings: Finding[] = [];
  const isMesh = (index: number | undefined): boolean => index !== undefined && routes[index]?.type === 'mesh';

  const parsed = parseConfigYamlDocuments(docs, file, defaultNamespace);
  const objects = parsed.objects.filter((o) => isMesh(splitOrigin(o.meta.origin ?? '').index));
  const salvaged = parsed.rejections.flatMap((r) => (r.salvaged && isMesh(splitOrigin(r.origin).index) ? [r.salvaged] : []));
  for (const r of parsed.rejections) {
    const { index } = splitOrigin(r.origin);
    if (!isMesh(index)) continue;
    for (const issue of r.issues) {
      findings.push({ level: 'Error', file, index, kind: r.kind, namespace: r.namespace, name: r.name, path: issue.path, message: issue.message });
    }
    for (const issue of r.warnings ?? []) {
      findings.push({ level: 'Warning', file, index, kind: r.kind, namespace: r.namespace, name: r.name, path: issue.path, message: issue.message });
    }
  }
  for (const o of objects) {
    const { index } = splitOrigin(o.meta.origin ?? '');
    for (const issue of o.warnings ?? []) {
      findings.push({ level: 'Warning', file, index, kind: o.meta.gvk.kind, namespace: o.meta.namespace, name: o.meta.name, path: issue.path, message: issue.message });
    }
  }
  routes.forEach((r, index) => {
    if (r === undefined || r.type === 'mesh') return;
    if (r.type === 'skip') {
      const doc = yamlValue(docs[index]) as Record<string, unknown>; // a skipped document has a value (route)
      findings.push({ level: 'Note', file, index, ...identity(doc, defaultNamespace), path: '', message: `skipped: ${r.why}` });
      return;
    }
    const id = identity(r.doc, defaultNamespace);
    if (r.doc.apiVersion === undefined) {
      findings.push({ level: 'Error', file, index, ...id, path: 'apiVersion', message: `kind ${r.kind} needs apiVersion "${WORKLOAD_KINDS[r.kind]}", got nothing` });
    }
    for (const issue of checkWorkload(r.kind, r.doc)) findings.push({ level: issue.level, file, index, ...id, path: issue.path, message: issue.message });
  });
  findings.sort((a, b) => (a.index ?? -1) - (b.index ?? -1));
  return { objects, salvaged, kubeObjects, findings, documents: routes.filter((r) => r !== undefined).length };
}
