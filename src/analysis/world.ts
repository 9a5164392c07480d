/**
 * The Kubernetes side of an analysed world: the Namespaces, Pods, Deployments, Services, Secrets,
 * ConfigMaps and gateway-api Gateways the analyzers look at, reduced to what they read. Built from
 * raw objects the same way whether they come from the live cluster or from the files given to
 * `meshctl analyze` (so a Service in a file defines its host, a Namespace in a file its labels).
 */
import { isRecord } from '../util/record.js';

type Rec = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Labels, annotations and similar string maps; non-string values are left out. */
function stringMap(v: unknown): Readonly<Record<string, string>> {
  if (!isRecord(v)) return {};
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

export interface ObjectMeta {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface KubeContainer {
  readonly name: string;
  readonly image: string;
  /** `securityContext.runAsUser` of the container, else of the pod. */
  readonly runAsUser?: number;
}

export interface KubePodTemplate {
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly containers: ReadonlyArray<KubeContainer>;
}

export interface KubePod extends ObjectMeta, KubePodTemplate {}

export interface KubeDeployment extends ObjectMeta {
  readonly selector: Readonly<Record<string, string>>;
  readonly template: KubePodTemplate;
}

export interface KubeServicePort {
  readonly name?: string;
  readonly port: number;
  readonly targetPort?: number | string;
  readonly protocol: string;
  readonly appProtocol?: string;
}

export interface KubeService extends ObjectMeta {
  /** Undefined for a Service without selector. */
  readonly selector?: Readonly<Record<string, string>>;
  readonly ports: ReadonlyArray<KubeServicePort>;
}

export interface KubeSecret extends ObjectMeta {
  readonly type: string;
  /** Keys of `data` and `stringData`. */
  readonly keys: ReadonlyArray<string>;
}

export interface KubeConfigMap extends ObjectMeta {
  readonly data: Readonly<Record<string, string>>;
}

/** A gateway-api Gateway, as far as references to it need. */
export interface GatewayApiGateway extends ObjectMeta {
  readonly listeners: ReadonlyArray<{ readonly name: string; readonly port: number; readonly hostname?: string }>;
}

export interface KubeWorld {
  readonly namespaces: ReadonlyArray<ObjectMeta>;
  readonly pods: ReadonlyArray<KubePod>;
  readonly deployments: ReadonlyArray<KubeDeployment>;
  readonly services: ReadonlyArray<KubeService>;
  readonly secrets: ReadonlyArray<KubeSecret>;
  readonly configMaps: ReadonlyArray<KubeConfigMap>;
  readonly gateways: ReadonlyArray<GatewayApiGateway>;
}

export const EMPTY_WORLD: KubeWorld = Object.freeze({ namespaces: [], pods: [], deployments: [], services: [], secrets: [], configMaps: [], gateways: [] });

/** The kinds read into a world, by `apiVersion` and `kind`. */
export function isWorldKind(apiVersion: unknown, kind: unknown): boolean {
  if (apiVersion === 'v1') return kind === 'Namespace' || kind === 'Pod' || kind === 'Service' || kind === 'Secret' || kind === 'ConfigMap';
  if (apiVersion === 'apps/v1') return kind === 'Deployment';
  return kind === 'Gateway' && typeof apiVersion === 'string' && apiVersion.startsWith('gateway.networking.k8s.io/');
}

function metaOf(o: Rec, defaultNamespace: string, namespaced = true): ObjectMeta | undefined {
  const m = isRecord(o.metadata) ? o.metadata : {};
  const name = str(m.name);
  if (!name) return undefined;
  return { name, namespace: namespaced ? str(m.namespace) || defaultNamespace : '', labels: stringMap(m.labels), annotations: stringMap(m.annotations) };
}

function runAsUserOf(v: unknown): number | undefined {
  const n = isRecord(v) ? v.runAsUser : undefined;
  return typeof n === 'number' ? n : undefined;
}

function templateOf(spec: unknown, meta: unknown): KubePodTemplate {
  const s = isRecord(spec) ? spec : {};
  const m = isRecord(meta) ? meta : {};
  const podUser = runAsUserOf(s.securityContext);
  const containers = (Array.isArray(s.containers) ? s.containers : []).filter(isRecord).map((c) => {
    const user = runAsUserOf(c.securityContext) ?? podUser;
    return { name: str(c.name) ?? '', image: str(c.image) ?? '', ...(user !== undefined ? { runAsUser: user } : {}) };
  });
  return { labels: stringMap(m.labels), annotations: stringMap(m.annotations), containers };
}

/** Reads the objects of the world kinds out of `objects`; others are ignored. */
export function kubeWorldFrom(objects: Iterable<unknown>, defaultNamespace: string): KubeWorld {
  const w = { namespaces: [] as ObjectMeta[], pods: [] as KubePod[], deployments: [] as KubeDeployment[], services: [] as KubeService[], secrets: [] as KubeSecret[], configMaps: [] as KubeConfigMap[], gateways: [] as GatewayApiGateway[] };
  for (const o of objects) {
    if (!isRecord(o) || !isWorldKind(o.apiVersion, o.kind)) continue;
    const spec = isRecord(o.spec) ? o.spec : {};
    switch (o.kind) {
      case 'Namespace': {
        const meta = metaOf(o, '', false);
        if (meta) w.namespaces.push({ ...meta, namespace: meta.name });
        break;
      }
      case 'Pod': {
        const meta = metaOf(o, defaultNamespace);
        if (meta) w.pods.push({ ...meta, ...templateOf(spec, o.metadata), name: meta.name, namespace: meta.namespace });
        break;
      }
      case 'Deployment': {
        const meta = metaOf(o, defaultNamespace);
        const template = isRecord(spec.template) ? spec.template : {};
        const selector = isRecord(spec.selector) ? stringMap(spec.selector.matchLabels) : {};
        if (meta) w.deployments.push({ ...meta, selector, template: templateOf(template.spec, template.metadata) });
        break;
      }
      case 'Service': {
        const meta = metaOf(o, defaultNamespace);
        if (!meta) break;
        const ports = (Array.isArray(spec.ports) ? spec.ports : []).filter(isRecord).flatMap((p) => {
          if (typeof p.port !== 'number') return [];
          const targetPort = typeof p.targetPort === 'number' || typeof p.targetPort === 'string' ? p.targetPort : undefined;
          return [{ name: str(p.name), port: p.port, protocol: (str(p.protocol) ?? 'TCP').toUpperCase(), ...(targetPort !== undefined ? { targetPort } : {}), ...(str(p.appProtocol) ? { appProtocol: str(p.appProtocol) } : {}) }];
        });
        w.services.push({ ...meta, ...(isRecord(spec.selector) ? { selector: stringMap(spec.selector) } : {}), ports });
        break;
      }
      case 'Secret': {
        const meta = metaOf(o, defaultNamespace);
        const keys = [...Object.keys(isRecord(o.data) ? o.data : {}), ...Object.keys(isRecord(o.stringData) ? o.stringData : {})];
        if (meta) w.secrets.push({ ...meta, type: str(o.type) ?? 'Opaque', keys });
        break;
      }
      case 'ConfigMap': {
        const meta = metaOf(o, defaultNamespace);
        if (meta) w.configMaps.push({ ...meta, data: stringMap(o.data) });
        break;
      }
      case 'Gateway': {
        const meta = metaOf(o, defaultNamespace);
        const listeners = (Array.isArray(spec.listeners) ? spec.listeners : []).filter(isRecord).map((l) => ({
          name: str(l.name) ?? '',
          port: typeof l.port === 'number' ? l.port : 0,
          ...(str(l.hostname) ? { hostname: str(l.hostname) } : {}),
        }));
        if (meta) w.gateways.push({ ...meta, listeners });
        break;
      }
    }
  }
  return w;
}

/** Two worlds as one; objects of `over` replace objects of `base` with the same kind, namespace and name. */
export function overlayWorld(base: KubeWorld, over: KubeWorld): KubeWorld {
  const merge = <T extends ObjectMeta>(a: ReadonlyArray<T>, b: ReadonlyArray<T>): T[] => {
    const key = (o: T): string => `${o.namespace}/${o.name}`;
    const replaced = new Set(b.map(key));
    return [...a.filter((o) => !replaced.has(key(o))), ...b];
  };
  return {
    namespaces: merge(base.namespaces, over.namespaces),
    pods: merge(base.pods, over.pods),
    deployments: merge(base.deployments, over.deployments),
    services: merge(base.services, over.services),
    secrets: merge(base.secrets, over.secrets),
    configMaps: merge(base.configMaps, over.configMaps),
    gateways: merge(base.gateways, over.gateways),
  };
}
