/**
 * RBAC rules of the control plane, kept to what the daemon reads and writes:
 *  - the config kinds of src/config/kinds.ts: read, and write their status (DISC_ENABLE_STATUS);
 *    WorkloadEntries are also written (auto-registration);
 *  - the service registry: pods, services, endpoints, endpoint slices, nodes, namespaces (read);
 *  - config maps everywhere: the root certificate map `mesh-ca-root-cert` goes into every namespace;
 *  - webhook configurations: read all; patch the CA bundle of its validating configuration (by name)
 *    and of its injector's and the revision tags' mutating configurations;
 *  - token and access reviews (CA and xDS authentication);
 *  - gateway-api kinds: read, and write their status;
 *  - in its own namespace only: secrets (`cacerts`, the self-signed CA) and leases (leader election);
 *  - with EXTERNAL_CA=MESHD_RA_CLUSTER_API: CertificateSigningRequests for CLUSTER_SIGNER only.
 * The reader role (`mesh-reader-service-account`, used by a remote control plane) only reads.
 */
import { CONFIG_KINDS } from '../../config/kinds.js';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

const READ = ['get', 'list', 'watch'];

/** Config kinds grouped by API group, groups and plurals sorted. */
function configResources(): Array<{ group: string; plurals: string[] }> {
  const groups = new Map<string, string[]>();
  for (const k of CONFIG_KINDS) groups.set(k.group, [...(groups.get(k.group) ?? []), k.plural]);
  return [...groups.keys()].sort().map((group) => ({ group, plurals: [...(groups.get(group) ?? [])].sort() }));
}

const GATEWAY_API_RESOURCES = ['gatewayclasses', 'gateways', 'grpcroutes', 'httproutes', 'referencegrants', 'tcproutes', 'tlsroutes'];

/**
 * Cluster-wide rules of meshd; `webhookNames` are the webhook configurations it may update;
 * `clusterSigner` (EXTERNAL_CA=MESHD_RA_CLUSTER_API with CLUSTER_SIGNER in its environment) adds what
 * signing through the Kubernetes CSR API needs: create, read and delete CertificateSigningRequests,
 * approve them, for that one signer only.
 */
export function meshdClusterRules(webhookNames: { validating: string }, opts: { readonly clusterSigner?: string } = {}): PolicyRule[] {
  const rules: PolicyRule[] = [];
  for (const { group, plurals } of configResources()) {
    rules.push({ apiGroups: [group], resources: plurals, verbs: READ });
    rules.push({ apiGroups: [group], resources: plurals.map((p) => `${p}/status`), verbs: ['get', 'update', 'patch'] });
  }
  rules.push({ apiGroups: ['networking.mesh.io'], resources: ['workloadentries'], verbs: ['create', 'update', 'patch', 'delete'] });
  rules.push({ apiGroups: [''], resources: ['endpoints', 'namespaces', 'nodes', 'pods', 'services'], verbs: READ });
  rules.push({ apiGroups: [''], resources: ['configmaps'], verbs: [...READ, 'create', 'update', 'patch'] });
  rules.push({ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: READ });
  rules.push({ apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'], verbs: READ });
  // Mutating: its own configuration and the revision tags pointing at its revision, whose names the
  // user chooses (`meshctl tag set --webhook-name`), so no resourceNames can list them (docs/adr/0072).
  rules.push({ apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], verbs: ['update', 'patch'] });
  rules.push({ apiGroups: ['admissionregistration.k8s.io'], resources: ['validatingwebhookconfigurations'], verbs: ['update', 'patch'], resourceNames: [webhookNames.validating] });
  rules.push({ apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: READ });
  rules.push({ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] });
  rules.push({ apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] });
  rules.push({ apiGroups: ['gateway.networking.k8s.io'], resources: GATEWAY_API_RESOURCES, verbs: READ });
  // Multi-cluster services: ENABLE_MCS_SERVICE_DISCOVERY reads exports, ENABLE_MCS_AUTOEXPORT writes them.
  rules.push({ apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceexports'], verbs: [...READ, 'create', 'update', 'patch', 'delete'] });
  rules.push({ apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceimports'], verbs: READ });
  rules.push({ apiGroups: ['gateway.networking.k8s.io'], resources: GATEWAY_API_RESOURCES.filter((r) => r !== 'referencegrants').map((r) => `${r}/status`), verbs: ['get', 'update', 'patch'] });
  if (opts.clusterSigner) {
    rules.push({ apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests'], verbs: ['create', 'get', 'delete'] });
    rules.push({ apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests/approval'], verbs: ['update'] });
    rules.push({ apiGroups: ['certificates.k8s.io'], resources: ['signers'], verbs: ['approve'], resourceNames: [opts.clusterSigner] });
  }
  return rules;
}

/** Rules of meshd in its own namespace. */
export function meshdNamespaceRules(): PolicyRule[] {
  return [
    { apiGroups: [''], resources: ['secrets'], verbs: [...READ, 'create', 'update', 'patch'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: [...READ, 'create', 'update', 'patch'] },
  ];
}

/** Read-only rules of the reader service account. */
export function readerClusterRules(): PolicyRule[] {
  const rules: PolicyRule[] = configResources().map(({ group, plurals }) => ({ apiGroups: [group], resources: plurals, verbs: READ }));
  rules.push({ apiGroups: [''], resources: ['configmaps', 'endpoints', 'namespaces', 'nodes', 'pods', 'services'], verbs: READ });
  rules.push({ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: READ });
  rules.push({ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] });
  rules.push({ apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] });
  return rules;
}

/** Rules of a gateway in its namespace: read the TLS secrets it serves. */
export function gatewayRules(): PolicyRule[] {
  return [{ apiGroups: [''], resources: ['secrets'], verbs: READ }];
}
