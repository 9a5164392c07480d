/**
 * The install API: `install.mesh.io/v1alpha1`, kind `MeshOperator`, as zod schemas with their
 * TypeScript types. Every object is strict: an unknown or mistyped field is an issue naming its
 * full path (`spec.components.meshd.k8s.replicaCount: expected number, got string "3"`).
 *
 * Free-form parts, passed through as given: `values` beyond the keys listed in `ValuesSchema`
 * (all of `values` goes into the injector config map), and the Kubernetes structures `affinity`,
 * `securityContext`, `hpaSpec.metrics`/`behavior` and `env[].valueFrom`, which the API server
 * validates at apply time. `meshConfig` is checked against the daemon's MeshConfig schema,
 * because the daemon refuses to start on a mesh config it cannot read.
 *
 * Overlays (`k8s.overlays`, where existing operator configuration has them) patch the rendered
 * objects of their component by path: see src/install/path.ts for the path syntax and
 * src/install/render/overlay.ts for what a patch does.
 */
import { z } from 'zod';
import { formatSchemaIssue } from '../config/validation/schema-issues.js';
import { MeshConfigSchema } from '../gen/config/schemas.js';

export const INSTALL_GROUP = 'install.mesh.io';
export const INSTALL_VERSION = 'v1alpha1';
export const INSTALL_API_VERSION = `${INSTALL_GROUP}/${INSTALL_VERSION}`;
export const MESH_OPERATOR_KIND = 'MeshOperator';
export const DEFAULT_NAMESPACE = 'mesh-system';

/** Kubernetes quantity: a number or text such as `500m`, `2Gi`, `1.5`. */
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$/;
const quantity = z.custom<string | number>(
  (v) => (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && QUANTITY.test(v)),
  { message: 'expected a quantity (a number or text such as 500m or 2Gi)' },
);
const intOrString = z.custom<number | string>(
  (v) => (typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && v !== ''),
  { message: 'expected an integer or a text such as 50%' },
);
const freeForm = z.record(z.string(), z.unknown());
const stringMap = z.record(z.string(), z.string());
const port = z.number().int().min(1).max(65535);

export const ResourceRequirementsSchema = z.strictObject({
  requests: z.record(z.string(), quantity).optional(),
  limits: z.record(z.string(), quantity).optional(),
});

export const HpaSpecSchema = z.strictObject({
  minReplicas: z.number().int().min(1).optional(),
  maxReplicas: z.number().int().min(1),
  /** autoscaling/v2 metric specs, passed through. */
  metrics: z.array(freeForm).optional(),
  /** autoscaling/v2 scaling behavior, passed through. */
  behavior: freeForm.optional(),
});

export const PodDisruptionBudgetSchema = z.strictObject({
  minAvailable: intOrString.optional(),
  maxUnavailable: intOrString.optional(),
});

export const EnvVarSchema = z.strictObject({
  name: z.string().min(1),
  value: z.string().optional(),
  /** core/v1 EnvVarSource, passed through. */
  valueFrom: freeForm.optional(),
});

export const TolerationSchema = z.strictObject({
  key: z.string().optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: z.number().int().optional(),
});

export const ServicePortSchema = z.strictObject({
  name: z.string().min(1),
  port,
  targetPort: intOrString.optional(),
  protocol: z.enum(['TCP', 'UDP', 'SCTP']).optional(),
  nodePort: port.optional(),
});

export const ServiceSettingsSchema = z.strictObject({
  type: z.enum(['ClusterIP', 'NodePort', 'LoadBalancer']).optional(),
  /** Replaces the component's default ports when given. */
  ports: z.array(ServicePortSchema).optional(),
  loadBalancerIP: z.string().optional(),
  loadBalancerSourceRanges: z.array(z.string()).optional(),
  externalTrafficPolicy: z.enum(['Cluster', 'Local']).optional(),
});

/** One patch: set `value` at `path` in the object, or delete what `path` names when `value` is absent or null. */
export const OverlayPatchSchema = z.strictObject({
  path: z.string().min(1),
  value: z.unknown().optional(),
});

/** Patches for one rendered object of the component, found by kind and name. */
export const OverlaySchema = z.strictObject({
  kind: z.string().min(1),
  name: z.string().min(1),
  patches: z.array(OverlayPatchSchema),
});

export const K8sSettingsSchema = z.strictObject({
  resources: ResourceRequirementsSchema.optional(),
  replicaCount: z.number().int().min(0).optional(),
  hpaSpec: HpaSpecSchema.optional(),
  podDisruptionBudget: PodDisruptionBudgetSchema.optional(),
  env: z.array(EnvVarSchema).optional(),
  nodeSelector: stringMap.optional(),
  /** core/v1 Affinity, passed through. */
  affinity: freeForm.optional(),
  tolerations: z.array(TolerationSchema).optional(),
  service: ServiceSettingsSchema.optional(),
  podAnnotations: stringMap.optional(),
  serviceAnnotations: stringMap.optional(),
  /** core/v1 PodSecurityContext, passed through. */
  securityContext: freeForm.optional(),
  priorityClassName: z.string().optional(),
  overlays: z.array(OverlaySchema).optional(),
});

const componentFields = {
  enabled: z.boolean().optional(),
  /** Namespace of the component's objects; default `spec.namespace`. */
  namespace: z.string().optional(),
  /** Image registry of the component; default `spec.hub`. */
  hub: z.string().optional(),
  /** Image tag of the component; default `spec.tag`. */
  tag: z.string().optional(),
  k8s: K8sSettingsSchema.optional(),
};

export const ComponentSchema = z.strictObject(componentFields);

export const GatewaySchema = z.strictObject({
  ...componentFields,
  /** Name of the Deployment and Service (and prefix of the service account and role). */
  name: z.string().min(1),
  /** Extra pod labels; the gateway selector label `mesh: ingressgateway|egressgateway` is added unless set here. */
  label: stringMap.optional(),
});

export const ComponentsSchema = z.strictObject({
  base: ComponentSchema.optional(),
  meshd: ComponentSchema.optional(),
  ingressGateways: z.array(GatewaySchema).optional(),
  egressGateways: z.array(GatewaySchema).optional(),
});

/** The keys of `values` that rendering reads; any other key is kept and passed to the injector. */
export const ValuesSchema = z.looseObject({
  global: z
    .looseObject({
      /** Log levels of meshd and the gateways (`--log_output_level`), e.g. `default:info`. */
      logging: z.looseObject({ level: z.string().optional() }).optional(),
      /** meshd logs as JSON (`--log_as_json`). */
      logAsJson: z.boolean().optional(),
      /** Proxy settings of the gateways. */
      proxy: z.looseObject({ logLevel: z.string().optional() }).optional(),
      /** CLUSTER_ID of meshd and the gateways; default `Cluster`. */
      multiCluster: z.looseObject({ clusterName: z.string().optional() }).optional(),
      /** Network of this cluster (label `topology.mesh.io/network` on the control-plane namespace). */
      network: z.string().optional(),
      imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
      imagePullSecrets: z.array(z.string()).optional(),
      /** `host:port` of the certificate service when it is not meshd's secured port (CA_ADDR of the injected proxies and the gateways). */
      caAddress: z.string().optional(),
      /** With meshd disabled (profile `remote`): `host[:port]` of the meshd that serves this cluster's webhooks. */
      remoteMeshdAddress: z.string().optional(),
    })
    .optional(),
  sidecarInjectorWebhook: z
    .looseObject({
      /** Injection policy written into the injector config: `enabled` or `disabled`. */
      policy: z.enum(['enabled', 'disabled']).optional(),
    })
    .optional(),
});

export const MeshOperatorSpecSchema = z.strictObject({
  /** Profile the spec overlays; default `default`. */
  profile: z.string().optional(),
  /** Control-plane revision; empty for the default revision. */
  revision: z.string().optional(),
  /** Image registry, e.g. `docker.io/meshproject`. */
  hub: z.string().optional(),
  /** Image tag; default the version of meshctl. */
  tag: z.string().optional(),
  /** Control-plane namespace; default `mesh-system`. */
  namespace: z.string().optional(),
  meshConfig: MeshConfigSchema.optional(),
  values: ValuesSchema.optional(),
  components: ComponentsSchema.optional(),
});

export const MeshOperatorSchema = z.strictObject({
  apiVersion: z.literal(INSTALL_API_VERSION),
  kind: z.literal(MESH_OPERATOR_KIND),
  metadata: z
    .strictObject({
      name: z.string().optional(),
      namespace: z.string().optional(),
      labels: stringMap.optional(),
      annotations: stringMap.optional(),
    })
    .optional(),
  spec: MeshOperatorSpecSchema.optional(),
});

export type ResourceRequirements = z.infer<typeof ResourceRequirementsSchema>;
export type HpaSpec = z.infer<typeof HpaSpecSchema>;
export type PodDisruptionBudgetSpec = z.infer<typeof PodDisruptionBudgetSchema>;
export type EnvVar = z.infer<typeof EnvVarSchema>;
export type Toleration = z.infer<typeof TolerationSchema>;
export type ServicePort = z.infer<typeof ServicePortSchema>;
export type ServiceSettings = z.infer<typeof ServiceSettingsSchema>;
export type OverlayPatch = z.infer<typeof OverlayPatchSchema>;
export type Overlay = z.infer<typeof OverlaySchema>;
export type K8sSettings = z.infer<typeof K8sSettingsSchema>;
export type ComponentSpec = z.infer<typeof ComponentSchema>;
export type GatewaySpec = z.infer<typeof GatewaySchema>;
export type ComponentsSpec = z.infer<typeof ComponentsSchema>;
export type Values = z.infer<typeof ValuesSchema>;
export type MeshOperatorSpec = z.infer<typeof MeshOperatorSpecSchema>;
export type MeshOperator = z.infer<typeof MeshOperatorSchema>;

/** One problem of a MeshOperator: the full field path (from the document root) and the reason. */
export interface InstallIssue {
  readonly path: string;
  readonly message: string;
}

export type SpecParse =
  | { readonly ok: true; readonly spec: MeshOperatorSpec }
  | { readonly ok: false; readonly issues: ReadonlyArray<z.core.$ZodIssue> };

/** Structural check of a spec (no defaults applied); issues keep zod's paths relative to `spec`. */
export function parseSpec(value: unknown): SpecParse {
  const r = MeshOperatorSpecSchema.safeParse(value, { reportInput: true });
  return r.success ? { ok: true, spec: r.data } : { ok: false, issues: r.error.issues };
}

/** Structural check of a whole MeshOperator document; issue paths start at the document root. */
export function checkOperatorDocument(value: unknown): InstallIssue[] {
  const r = MeshOperatorSchema.safeParse(value, { reportInput: true });
  return r.success ? [] : r.error.issues.flatMap((i) => formatSchemaIssue(i));
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function checkLabel(value: string | undefined, path: string, issues: InstallIssue[], max = 63): void {
  if (value === undefined || value === '') return;
  if (value.length > max || !DNS_LABEL.test(value)) {
    issues.push({ path, message: `"${value}" is not a valid name (lower-case letters, digits and "-", at most ${max} characters)` });
  }
}

/**
 * Rules across fields, for a spec that passed the schema: names are DNS labels, gateway names are
 * unique per namespace, autoscaling bounds are ordered, a disruption budget sets one bound.
 */
export function semanticIssues(spec: MeshOperatorSpec): InstallIssue[] {
  const issues: InstallIssue[] = [];
  // meshd-<revision> and mesh-sidecar-injector-<revision> must stay valid names.
  checkLabel(spec.revision, 'spec.revision', issues, 40);
  checkLabel(spec.namespace, 'spec.namespace', issues);
  const comps = spec.components ?? {};
  const checkK8s = (k8s: K8sSettings | undefined, base: string) => {
    if (!k8s) return;
    const hpa = k8s.hpaSpec;
    if (hpa?.minReplicas !== undefined && hpa.minReplicas > hpa.maxReplicas) {
      issues.push({ path: `${base}.k8s.hpaSpec.minReplicas`, message: `${hpa.minReplicas} is more than maxReplicas ${hpa.maxReplicas}` });
    }
    const pdb = k8s.podDisruptionBudget;
    if (pdb && (pdb.minAvailable === undefined) === (pdb.maxUnavailable === undefined)) {
      issues.push({ path: `${base}.k8s.podDisruptionBudget`, message: 'set exactly one of minAvailable and maxUnavailable' });
    }
    const ports = new Set<string>();
    k8s.service?.ports?.forEach((p, i) => {
      if (ports.has(p.name)) issues.push({ path: `${base}.k8s.service.ports[${i}].name`, message: `duplicate port name "${p.name}"` });
      ports.add(p.name);
    });
    const env = new Set<string>();
    k8s.env?.forEach((e, i) => {
      if (env.has(e.name)) issues.push({ path: `${base}.k8s.env[${i}].name`, message: `duplicate variable "${e.name}"` });
      env.add(e.name);
      if (e.value !== undefined && e.valueFrom !== undefined) issues.push({ path: `${base}.k8s.env[${i}]`, message: 'set value or valueFrom, not both' });
    });
  };
  for (const key of ['base', 'meshd'] as const) {
    checkLabel(comps[key]?.namespace, `spec.components.${key}.namespace`, issues);
    checkK8s(comps[key]?.k8s, `spec.components.${key}`);
  }
  const seen = new Map<string, string>();
  for (const key of ['ingressGateways', 'egressGateways'] as const) {
    (comps[key] ?? []).forEach((gw, i) => {
      const base = `spec.components.${key}[${i}]`;
      checkLabel(gw.name, `${base}.name`, issues);
      checkLabel(gw.namespace, `${base}.namespace`, issues);
      checkK8s(gw.k8s, base);
      const id = `${gw.namespace || spec.namespace || DEFAULT_NAMESPACE}/${gw.name}`;
      const first = seen.get(id);
      if (first) issues.push({ path: `${base}.name`, message: `duplicate gateway name "${gw.name}" (also at ${first})` });
      else seen.set(id, `${base}.name`);
    });
  }
  return issues;
}
