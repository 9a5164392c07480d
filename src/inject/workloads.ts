/**
 * Injection into Kubernetes documents (`meshctl cluster-inject` and `x cluster-uninject`): a Pod,
 * or the pod template of a Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController,
 * Job or CronJob, and the items of a `List`. Every other document passes through unchanged, so a
 * file with mixed kinds is safe. A template is injected exactly as the webhook injects the pods
 * made from it (`decideInjection`), with the workload named after the document.
 */
import type { InjectionInputs } from './config.js';
import { decideInjection } from './admission.js';
import { InjectionError } from './errors.js';
import { ownerPath } from './inject.js';
import type { Pod } from './pod.js';
import { uninjectPod } from './uninject.js';

type Doc = Record<string, unknown>;

const isObject = (v: unknown): v is Doc => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Where the pod template sits in a workload of each kind. */
const TEMPLATE_PATHS: Readonly<Record<string, ReadonlyArray<string>>> = {
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  ReplicationController: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

/** What happened to one document. */
export interface DocumentResult {
  readonly kind: string;
  readonly name: string;
  readonly outcome: 'injected' | 'skipped' | 'unsupported' | 'uninjected';
  readonly why?: string;
}

/** A document that cannot be injected: which one and why. */
export class DocumentError extends Error {
  override readonly name = 'DocumentError';
}

function label(doc: Doc): { kind: string; name: string; namespace?: string } {
  const meta = isObject(doc.metadata) ? doc.metadata : {};
  return { kind: typeof doc.kind === 'string' ? doc.kind : '', name: typeof meta.name === 'string' ? meta.name : '', namespace: typeof meta.namespace === 'string' ? meta.namespace : undefined };
}

function at(doc: Doc, path: ReadonlyArray<string>): Doc | undefined {
  let cur: unknown = doc;
  for (const k of path) cur = isObject(cur) ? cur[k] : undefined;
  return isObject(cur) ? cur : undefined;
}

function setAt(doc: Doc, path: ReadonlyArray<string>, value: Doc): Doc {
  const [head, ...rest] = path;
  if (head === undefined) return value;
  const child = isObject(doc[head]) ? (doc[head] as Doc) : {};
  return { ...doc, [head]: setAt(child, rest, value) };
}

/** Applies `f` to the pod (or pod template) of every supported document, recursing into Lists. */
function mapPods(doc: unknown, defaultNamespace: string, results: DocumentResult[], f: (pod: Pod, namespace: string, doc: { kind: string; name: string; apiVersion: string }, where: string) => { pod?: Pod; outcome: DocumentResult['outcome']; why?: string }): unknown {
  if (!isObject(doc)) return doc;
  const l = label(doc);
  if (l.kind === 'List' && Array.isArray(doc.items)) return { ...doc, items: doc.items.map((i) => mapPods(i, defaultNamespace, results, f)) };
  const namespace = l.namespace || defaultNamespace;
  const where = `${l.kind} ${l.namespace ? `${l.namespace}/` : ''}${l.name || '(unnamed)'}`;
  const apiVersion = typeof doc.apiVersion === 'string' ? doc.apiVersion : '';
  if (l.kind === 'Pod' && (apiVersion === 'v1' || apiVersion === '')) {
    const r = f(doc as Pod, namespace, { kind: l.kind, name: l.name, apiVersion: 'v1' }, where);
    results.push({ kind: l.kind, name: l.name, outcome: r.outcome, why: r.why });
    return r.pod ?? doc;
  }
  const path = TEMPLATE_PATHS[l.kind];
  const template = path ? at(doc, path) : undefined;
  if (!path || !template) {
    results.push({ kind: l.kind, name: l.name, outcome: 'unsupported' });
    return doc;
  }
  const r = f(template as Pod, namespace, { kind: l.kind, name: l.name, apiVersion }, `${where} ${path.join('.')}`);
  results.push({ kind: l.kind, name: l.name, outcome: r.outcome, why: r.why });
  return r.pod ? setAt(doc, path, r.pod as Doc) : doc;
}

/** Injects every supported document of `docs` as the webhook would; throws DocumentError for a pod it must refuse. */
export function injectDocuments(docs: ReadonlyArray<unknown>, inputs: InjectionInputs, defaultNamespace = 'default'): { docs: unknown[]; results: DocumentResult[] } {
  const results: DocumentResult[] = [];
  const out = docs.map((d) =>
    mapPods(d, defaultNamespace, results, (pod, namespace, doc, where) => {
      const workload = doc.kind === 'Pod' ? undefined : { name: doc.name, owner: ownerPath(doc.apiVersion, doc.kind, namespace, doc.name) };
      const v = decideInjection(pod, namespace, inputs, workload);
      if (v.kind === 'refuse') throw new DocumentError(`${where}: ${v.error.message}`);
      if (v.kind === 'skip') return { outcome: 'skipped', why: v.why };
      return { pod: v.pod, outcome: 'injected' };
    }),
  );
  return { docs: out, results };
}

/** Removes what the injector added from every supported document of `docs`. */
export function uninjectDocuments(docs: ReadonlyArray<unknown>, defaultNamespace = 'default'): { docs: unknown[]; results: DocumentResult[] } {
  const results: DocumentResult[] = [];
  const out = docs.map((d) =>
    mapPods(d, defaultNamespace, results, (pod, _namespace, _doc, where) => {
      try {
        const r = uninjectPod(pod);
        return r ? { pod: r, outcome: 'uninjected' } : { outcome: 'skipped', why: 'not injected' };
      } catch (e) {
        if (e instanceof InjectionError) throw new DocumentError(`${where}: ${e.message}`);
        throw e;
      }
    }),
  );
  return { docs: out, results };
}
