/**
 * The injector's configuration: the ConfigMap `mesh-sidecar-injector[-<revision>]` of the mesh
 * namespace, key `config` (YAML: policy, default templates, selectors, injected annotations) and key
 * `values` (JSON: images, proxy defaults, capture ranges; the installation's `values`), and the mesh
 * config's proxy defaults. Parsing refuses what it cannot use with the key and field named; the
 * templates themselves are code (./templates.ts, docs/adr/0070), so `config` chooses among them.
 */
import { z } from 'zod';
import { ProxyDefaultsSchema, type ProxyDefaults } from '../gen/config/schemas.js';
import { formatSchemaIssue } from '../config/validation/schema-issues.js';
import { readYaml } from '../util/yaml.js';
import { isTemplateName, TEMPLATE_NAMES, type TemplateName } from './names.js';

/** A problem with the injector's configuration (the operator's to fix), naming where it is. */
export class InjectionConfigError extends Error {
  override readonly name = 'InjectionConfigError';
  constructor(readonly issues: readonly string[]) {
    super(issues.join('; '));
  }
}

const requirement = z.strictObject({
  key: z.string().min(1),
  operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
  values: z.array(z.string()).optional(),
});

export const LabelSelectorSchema = z.strictObject({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z.array(requirement).optional(),
});
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;

const ConfigSchema = z.strictObject({
  /** `enabled`: inject unless a pod opts out; `disabled`: only pods that opt in. */
  policy: z.enum(['enabled', 'disabled']).optional(),
  /** Templates used when a pod names none (`inject.mesh.io/templates`). */
  defaultTemplates: z.array(z.string()).optional(),
  /** Pods matching one of these are injected even under policy `disabled` (unless they opt out). */
  alwaysInjectSelector: z.array(LabelSelectorSchema).optional(),
  /** Pods matching one of these are never injected, unless they opt in. */
  neverInjectSelector: z.array(LabelSelectorSchema).optional(),
  /** Annotations added to every injected pod. */
  injectedAnnotations: z.record(z.string(), z.string()).optional(),
});

export interface InjectorConfig {
  readonly policy: 'enabled' | 'disabled';
  readonly defaultTemplates: ReadonlyArray<TemplateName>;
  readonly alwaysInjectSelector: ReadonlyArray<LabelSelector>;
  readonly neverInjectSelector: ReadonlyArray<LabelSelector>;
  readonly injectedAnnotations: Readonly<Record<string, string>>;
}

export const DEFAULT_INJECTOR_CONFIG: InjectorConfig = Object.freeze({
  policy: 'enabled',
  defaultTemplates: Object.freeze(['sidecar'] as TemplateName[]),
  alwaysInjectSelector: Object.freeze([]),
  neverInjectSelector: Object.freeze([]),
  injectedAnnotations: Object.freeze({}),
});

const stringMap = z.record(z.string(), z.string());
const quantityMap = z.record(z.string(), z.union([z.string(), z.number()]));

const ProxyValuesSchema = z.looseObject({
  logLevel: z.enum(['trace', 'debug', 'info', 'warning', 'error', 'critical', 'off']).optional(),
  componentLogLevel: z.string().optional(),
  resources: z.strictObject({ requests: quantityMap.optional(), limits: quantityMap.optional() }).optional(),
  includeIPRanges: z.string().optional(),
  excludeIPRanges: z.string().optional(),
  includeInboundPorts: z.string().optional(),
  excludeInboundPorts: z.string().optional(),
  includeOutboundPorts: z.string().optional(),
  excludeOutboundPorts: z.string().optional(),
  interceptionMode: z.enum(['REDIRECT', 'TPROXY', 'NONE']).optional(),
  holdApplicationUntilProxyStarts: z.boolean().optional(),
  readinessInitialDelaySeconds: z.number().int().min(0).optional(),
  readinessPeriodSeconds: z.number().int().min(1).optional(),
  readinessFailureThreshold: z.number().int().min(1).optional(),
});

/** The keys of `values` the injector reads; any other key is kept and ignored here. */
export const InjectionValuesSchema = z.looseObject({
  global: z
    .looseObject({
      hub: z.string().optional(),
      tag: z.string().optional(),
      /** The proxy image; default `<hub>/proxy:<tag>`. */
      proxyImage: z.string().optional(),
      meshNamespace: z.string().optional(),
      revision: z.string().optional(),
      /** `host:port` of meshd's secured port (xDS and the certificate service). */
      discoveryAddress: z.string().optional(),
      /** `host:port` of the certificate service when it is not meshd's secured port. */
      caAddress: z.string().optional(),
      imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
      imagePullSecrets: z.array(z.string()).optional(),
      /** Only `third-party-jwt`: the agent proves the pod's identity with the projected token for audience mesh-ca. */
      jwtPolicy: z
        .string()
        .refine((v) => v === 'third-party-jwt', { message: 'only third-party-jwt is supported (mesh-agent proves the pod with its projected token for audience mesh-ca; it has no first-party-jwt mode)' })
        .optional(),
      trustDomain: z.string().optional(),
      meshID: z.string().optional(),
      network: z.string().optional(),
      multiCluster: z.looseObject({ clusterName: z.string().optional() }).optional(),
      logging: z.looseObject({ level: z.string().optional() }).optional(),
      logAsJson: z.boolean().optional(),
      /** Inject the proxy as a native sidecar (an init container that keeps running); unset: when the cluster supports it. */
      nativeSidecar: z.boolean().optional(),
      proxy: ProxyValuesSchema.optional(),
    })
    .optional(),
  sidecarInjectorWebhook: z
    .looseObject({
      policy: z.enum(['enabled', 'disabled']).optional(),
      /** Rewrite the application's HTTP probes through the agent (default true). */
      rewriteAppHTTPProbe: z.boolean().optional(),
    })
    .optional(),
});
export type InjectionValues = z.infer<typeof InjectionValuesSchema>;

function issuesOf(error: z.ZodError, where: string): string[] {
  return error.issues.flatMap((i) => formatSchemaIssue(i)).map((i) => `${where}: ${i.path}: ${i.message}`);
}

/** Parses the `config` key (YAML). `where` names it in errors (e.g. `ConfigMap mesh-system/mesh-sidecar-injector key config`). */
export function parseInjectorConfig(text: string, where = 'config'): InjectorConfig {
  let doc: unknown;
  try {
    doc = readYaml(text) ?? {};
  } catch (e) {
    throw new InjectionConfigError([`${where}: invalid YAML: ${e instanceof Error ? e.message : String(e)}`]);
  }
  const r = ConfigSchema.safeParse(doc, { reportInput: true });
  if (!r.success) throw new InjectionConfigError(issuesOf(r.error, where));
  const c = r.data;
  const templates = c.defaultTemplates ?? ['sidecar'];
  const unknown = templates.filter((t) => !isTemplateName(t));
  if (unknown.length > 0) {
    throw new InjectionConfigError([`${where}: defaultTemplates: ${unknown.map((t) => JSON.stringify(t)).join(', ')} ${unknown.length === 1 ? 'is not a template' : 'are not templates'} (templates: ${TEMPLATE_NAMES.join(', ')})`]);
  }
  if (templates.length === 0) throw new InjectionConfigError([`${where}: defaultTemplates: empty; name at least one of ${TEMPLATE_NAMES.join(', ')}`]);
  return Object.freeze({
    policy: c.policy ?? 'enabled',
    defaultTemplates: Object.freeze(templates as TemplateName[]),
    alwaysInjectSelector: Object.freeze(c.alwaysInjectSelector ?? []),
    neverInjectSelector: Object.freeze(c.neverInjectSelector ?? []),
    injectedAnnotations: Object.freeze({ ...(c.injectedAnnotations ?? {}) }),
  });
}

/** Parses the `values` key (JSON, or YAML for files given to meshctl). */
export function parseInjectionValues(text: string, where = 'values'): InjectionValues {
  let doc: unknown;
  try {
    doc = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    try {
      doc = readYaml(text) ?? {};
    } catch (e) {
      throw new InjectionConfigError([`${where}: neither JSON nor YAML: ${e instanceof Error ? e.message : String(e)}`]);
    }
  }
  const r = InjectionValuesSchema.safeParse(doc, { reportInput: true });
  if (!r.success) throw new InjectionConfigError(issuesOf(r.error, where));
  return r.data;
}

/** Parses proxy defaults (the mesh config's `defaultConfig`, or a pod's `proxy.mesh.io/config`). */
export function parseProxyDefaults(value: unknown, where: string): ProxyDefaults {
  const r = ProxyDefaultsSchema.safeParse(value ?? {}, { reportInput: true });
  if (!r.success) throw new InjectionConfigError(issuesOf(r.error, where));
  return r.data;
}

/** What the injector knows of the mesh config. */
export interface MeshView {
  readonly trustDomain: string;
  /** The mesh config's `defaultConfig`. */
  readonly defaultConfig?: ProxyDefaults;
}

/** Everything the injection of one pod reads besides the pod. */
export interface InjectionInputs {
  readonly config: InjectorConfig;
  readonly values: InjectionValues;
  readonly mesh: MeshView;
  /** Control-plane revision of this injector (`default` for the default one). */
  readonly revision: string;
  /** DNS domain of the cluster (`--domain`). */
  readonly domain: string;
  /** Whether the cluster runs native sidecars (Kubernetes 1.29 and later); `values.global.nativeSidecar` wins. */
  readonly clusterSupportsNativeSidecars: boolean;
  /** REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION: the agent probes the application on localhost. */
  readonly probeLocalhost: boolean;
  /** ENABLE_LEGACY_FSGROUP_INJECTION: set the pod's fsGroup to 1337 (for tokens on old clusters). */
  readonly legacyFsGroup: boolean;
}

/** The injector ConfigMap's two keys, parsed. */
export function injectorConfigMapContent(data: Readonly<Record<string, string>> | undefined, where: string): { config: InjectorConfig; values: InjectionValues } {
  if (!data || (data.config === undefined && data.values === undefined)) {
    throw new InjectionConfigError([`${where}: has neither key config nor key values`]);
  }
  return {
    config: data.config === undefined ? DEFAULT_INJECTOR_CONFIG : parseInjectorConfig(data.config, `${where} key config`),
    values: data.values === undefined ? {} : parseInjectionValues(data.values, `${where} key values`),
  };
}

export type { ProxyDefaults };
export { stringMap };
