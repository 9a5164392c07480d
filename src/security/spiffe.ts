/** SPIFFE identities of workloads: `spiffe://<trust-domain>/ns/<namespace>/sa/<service-account>`. */

export interface SpiffeId {
  readonly trustDomain: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const TRUST_DOMAIN = /^[a-z0-9._-]+$/;
const SA = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

export function formatSpiffeId(id: SpiffeId): string {
  return `spiffe://${id.trustDomain}/ns/${id.namespace}/sa/${id.serviceAccount}`;
}

/** The identity of a URI SAN, or undefined when it is not a workload SPIFFE id of this form. */
export function parseSpiffeId(uri: string): SpiffeId | undefined {
  const m = /^spiffe:\/\/([^/]+)\/ns\/([^/]+)\/sa\/([^/]+)$/.exec(uri);
  if (!m) return undefined;
  const [, trustDomain, namespace, serviceAccount] = m;
  if (!TRUST_DOMAIN.test(trustDomain) || !LABEL.test(namespace) || namespace.length > 63 || !SA.test(serviceAccount) || serviceAccount.length > 253) return undefined;
  return { trustDomain, namespace, serviceAccount };
}

/** `system:serviceaccount:<ns>:<sa>` (a TokenReview's username) as namespace and account. */
export function parseServiceAccountUser(username: string): { namespace: string; serviceAccount: string } | undefined {
  const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(username);
  if (!m || !LABEL.test(m[1]) || !SA.test(m[2])) return undefined;
  return { namespace: m[1], serviceAccount: m[2] };
}
