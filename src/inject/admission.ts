/**
 * AdmissionReview v1 (admission.k8s.io/v1) in and out, and the injection verdict for one pod. The
 * webhook (`/inject`, src/server/webhooks.ts) and `meshctl cluster-inject` both call `decideInjection`,
 * so what meshctl prints is the webhook's patch applied to the same pod.
 *
 * Outcomes of `/inject`, and what the API server makes of them:
 *   malformed review          HTTP 400 with the field named       the webhook call fails: failurePolicy
 *   injector config missing    HTTP 500 naming the ConfigMap       the webhook call fails: failurePolicy
 *     or invalid
 *   a pod it cannot render     allowed: false, code 400, the pod's  the pod is refused with that message
 *                              field and the reason
 *   not to inject              allowed: true, no patch             the pod is created as it is
 *   injected                   allowed: true, a JSONPatch          the pod is created with the proxy
 */
import type { InjectionInputs } from './config.js';
import { InjectionError } from './errors.js';
import { injectPod, type InjectionStatus, type WorkloadRef } from './inject.js';
import { jsonPatch, type JsonPatchOp } from './json-patch.js';
import type { Pod } from './pod.js';
import { injectionDecision, type SkipReason } from './selection.js';

export const ADMISSION_API_VERSION = 'admission.k8s.io/v1';

export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export interface AdmissionRequest {
  readonly uid: string;
  readonly kind: GroupVersionKind;
  readonly resource?: { readonly group: string; readonly version: string; readonly resource: string };
  readonly subResource?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly operation: string;
  readonly object?: unknown;
  readonly oldObject?: unknown;
  readonly dryRun?: boolean;
}

export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly patch?: string;
  readonly patchType?: 'JSONPatch';
  readonly status?: { readonly code: number; readonly message: string; readonly reason?: string };
  readonly warnings?: ReadonlyArray<string>;
}

/** The request body is not an AdmissionReview the webhook can read (HTTP 400). */
export class AdmissionReviewError extends Error {
  override readonly name = 'AdmissionReviewError';
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Reads an AdmissionReview v1 body; throws AdmissionReviewError naming the field that is wrong. */
export function parseAdmissionReview(body: string): AdmissionRequest {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw new AdmissionReviewError(`body: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!isObject(doc)) throw new AdmissionReviewError('body: not a JSON object');
  if (doc.kind !== 'AdmissionReview') throw new AdmissionReviewError(`kind: ${JSON.stringify(doc.kind)}, expected "AdmissionReview"`);
  if (doc.apiVersion !== ADMISSION_API_VERSION) throw new AdmissionReviewError(`apiVersion: ${JSON.stringify(doc.apiVersion)}, expected "${ADMISSION_API_VERSION}" (set admissionReviewVersions: [v1])`);
  const r = doc.request;
  if (!isObject(r)) throw new AdmissionReviewError('request: missing');
  if (typeof r.uid !== 'string' || r.uid === '') throw new AdmissionReviewError('request.uid: missing');
  if (!isObject(r.kind) || typeof r.kind.kind !== 'string') throw new AdmissionReviewError('request.kind: missing');
  if (typeof r.operation !== 'string') throw new AdmissionReviewError('request.operation: missing');
  if (r.namespace !== undefined && typeof r.namespace !== 'string') throw new AdmissionReviewError('request.namespace: not a string');
  return {
    uid: r.uid,
    kind: { group: String(r.kind.group ?? ''), version: String(r.kind.version ?? ''), kind: r.kind.kind },
    resource: isObject(r.resource) ? { group: String(r.resource.group ?? ''), version: String(r.resource.version ?? ''), resource: String(r.resource.resource ?? '') } : undefined,
    subResource: typeof r.subResource === 'string' ? r.subResource : undefined,
    namespace: r.namespace as string | undefined,
    name: typeof r.name === 'string' ? r.name : undefined,
    operation: r.operation,
    object: r.object,
    oldObject: r.oldObject,
    dryRun: r.dryRun === true,
  };
}

/** The AdmissionReview that answers `response`. */
export function admissionReview(response: AdmissionResponse): Record<string, unknown> {
  return { apiVersion: ADMISSION_API_VERSION, kind: 'AdmissionReview', response };
}

export type InjectionVerdict =
  | { readonly kind: 'skip'; readonly why: string; readonly reason: SkipReason }
  | { readonly kind: 'inject'; readonly pod: Pod; readonly ops: JsonPatchOp[]; readonly status: InjectionStatus }
  | { readonly kind: 'refuse'; readonly error: InjectionError };

/** The injector's verdict on `pod` of `namespace`: leave it, inject it (with the patch), or refuse it. */
export function decideInjection(pod: Pod, namespace: string, inputs: InjectionInputs, workload?: WorkloadRef): InjectionVerdict {
  try {
    const d = injectionDecision(pod, namespace, inputs.config);
    if (!d.inject) return { kind: 'skip', why: d.why, reason: d.reason };
    const r = injectPod(pod, namespace, inputs, workload);
    return { kind: 'inject', pod: r.pod, ops: jsonPatch(pod, r.pod), status: r.status };
  } catch (e) {
    if (e instanceof InjectionError) return { kind: 'refuse', error: e };
    throw e;
  }
}

export type InjectionOutcome =
  | { readonly outcome: 'success'; readonly response: AdmissionResponse }
  | { readonly outcome: 'skip'; readonly reason: string; readonly response: AdmissionResponse }
  | { readonly outcome: 'failure'; readonly reason: 'pod'; readonly response: AdmissionResponse };

/** Answers a parsed request for `/inject` with the injector's inputs. Non-pod and non-create requests pass unchanged. */
export function answerInjection(req: AdmissionRequest, inputs: InjectionInputs): InjectionOutcome {
  if (req.kind.kind !== 'Pod' || req.kind.group !== '' || req.subResource) return { outcome: 'skip', reason: 'not_pod', response: { uid: req.uid, allowed: true } };
  if (req.operation !== 'CREATE') return { outcome: 'skip', reason: 'not_create', response: { uid: req.uid, allowed: true } };
  if (!isObject(req.object)) throw new AdmissionReviewError('request.object: missing (the pod)');
  const pod = req.object as Pod;
  const namespace = req.namespace || pod.metadata?.namespace || 'default';
  const v = decideInjection(pod, namespace, inputs);
  if (v.kind === 'skip') return { outcome: 'skip', reason: v.reason, response: { uid: req.uid, allowed: true } };
  if (v.kind === 'refuse') {
    return {
      outcome: 'failure',
      reason: 'pod',
      response: { uid: req.uid, allowed: false, status: { code: 400, reason: 'BadRequest', message: `sidecar injection: ${v.error.message}` } },
    };
  }
  return { outcome: 'success', response: { uid: req.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(v.ops)).toString('base64') } };
}
