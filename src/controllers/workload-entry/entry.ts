/**
 * Pure parts of auto-registration: the annotations that record which daemon a workload is
 * connected to, the entry's name, and the WorkloadEntry built from a WorkloadGroup and a Proxy.
 */
import type { WorkloadEntry, WorkloadGroup } from '../../gen/config/schemas.js';
import type { KubeObject, KubeObjectMeta } from '../../kube/types.js';
import type { Proxy } from '../../model/proxy.js';

/** Marks an auto-registered entry; value: the WorkloadGroup name. */
export const AUTO_REGISTRATION_GROUP = 'mesh.io/autoRegistrationGroup';
/** Identity (pod name) of the daemon the workload is connected to. */
export const WORKLOAD_CONTROLLER = 'mesh.io/workloadController';
/** When the workload connected to that daemon (RFC 3339 with milliseconds). */
export const CONNECTED_AT = 'mesh.io/connectedAt';
/** When the workload disconnected; absent while connected. */
export const DISCONNECTED_AT = 'mesh.io/disconnectedAt';

export const NETWORKING_API_VERSION = 'networking.mesh.io/v1';

export interface WorkloadGroupObject extends KubeObject {
  readonly spec?: WorkloadGroup;
}

export interface WorkloadEntryObject extends KubeObject {
  readonly spec?: WorkloadEntry;
  readonly status?: unknown;
}

/** `<group>-<ip>`, lower case, with an IPv6 address's colons as dashes. */
export function entryName(group: string, ip: string): string {
  const name = `${group}-${ip}`.toLowerCase().replace(/[^a-z0-9.-]/g, '-').replace(/-+$/, '');
  if (name.length > 253) throw new Error(`WorkloadEntry name ${name.slice(0, 40)}…: longer than 253 characters`);
  return name;
}

export interface EntryInput {
  readonly group: WorkloadGroupObject;
  readonly proxy: Proxy;
  readonly name: string;
  readonly identity: string;
  readonly connectedAt: string;
  /** The entry as stored now, if any: its other metadata is kept. */
  readonly existing?: WorkloadEntryObject;
}

function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== '')) as T;
}

function localityOf(p: Proxy): string | undefined {
  const l = p.locality;
  if (!l.region && !l.zone && !l.subzone) return undefined;
  return [l.region, l.zone, l.subzone].join('/').replace(/\/+$/, '');
}

/** The WorkloadEntry for a connected proxy of a group: the group's template, with the proxy's address. */
export function buildEntry(input: EntryInput): WorkloadEntryObject {
  const { group, proxy, existing } = input;
  const spec = group.spec;
  if (!spec) throw new Error(`WorkloadGroup ${group.metadata?.namespace}/${group.metadata?.name} has no spec`);
  const ip = proxy.ipAddresses[0];
  const template = spec.template;
  const entrySpec: WorkloadEntry = compact({
    ...template,
    address: ip,
    labels: { ...(template.labels ?? {}), ...proxy.labels },
    network: proxy.network || template.network,
    locality: localityOf(proxy) ?? template.locality,
    serviceAccount: template.serviceAccount || proxy.serviceAccount || undefined,
  });
  const annotations: Record<string, string> = {
    ...(existing?.metadata?.annotations ?? {}),
    ...(spec.metadata?.annotations ?? {}),
    [AUTO_REGISTRATION_GROUP]: group.metadata?.name ?? '',
    [WORKLOAD_CONTROLLER]: input.identity,
    [CONNECTED_AT]: input.connectedAt,
  };
  delete annotations[DISCONNECTED_AT];
  const owner = group.metadata?.uid
    ? [{ apiVersion: NETWORKING_API_VERSION, kind: 'WorkloadGroup', name: group.metadata.name ?? '', uid: group.metadata.uid, controller: false }]
    : undefined;
  const otherOwners = (existing?.metadata?.ownerReferences ?? []).filter((r) => !(r.kind === 'WorkloadGroup' && r.name === group.metadata?.name));
  const metadata: KubeObjectMeta & { managedFields?: undefined } = {
    ...(existing?.metadata ?? {}),
    name: input.name,
    namespace: proxy.namespace,
    labels: { ...(existing?.metadata?.labels ?? {}), ...(spec.metadata?.labels ?? {}), ...proxy.labels },
    annotations,
    ownerReferences: owner ? [...otherOwners, ...owner] : existing?.metadata?.ownerReferences,
    managedFields: undefined,
  };
  return { apiVersion: NETWORKING_API_VERSION, kind: 'WorkloadEntry', metadata: compact(metadata), spec: entrySpec };
}

/** The entry with `annotations` changed (`null` removes one); everything else kept, for a conditional PUT. */
export function withAnnotations(entry: WorkloadEntryObject, changes: Readonly<Record<string, string | null>>): WorkloadEntryObject {
  const annotations: Record<string, string> = { ...(entry.metadata?.annotations ?? {}) };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete annotations[k];
    else annotations[k] = v;
  }
  return { apiVersion: entry.apiVersion, kind: entry.kind, metadata: { ...(entry.metadata ?? {}), annotations }, spec: entry.spec };
}

/** True when the entry was auto-registered. */
export function isAutoRegistered(entry: KubeObject): boolean {
  return !!entry.metadata?.annotations?.[AUTO_REGISTRATION_GROUP];
}

/** A short text of a group's readiness probe, e.g. `httpGet :8080/ready`. */
export function describeProbe(probe: NonNullable<WorkloadGroup['probe']>): string {
  if (probe.httpGet) return `httpGet :${probe.httpGet.port}${probe.httpGet.path ?? '/'}`;
  if (probe.tcpSocket) return `tcpSocket :${probe.tcpSocket.port}`;
  if (probe.exec) return `exec ${(probe.exec.command ?? []).join(' ')}`.trim();
  return 'probe';
}

/** An annotation of an object. */
export function annotation(o: KubeObject, key: string): string | undefined {
  return o.metadata?.annotations?.[key];
}

/** `namespace/name` of an entry: the key of both workload-entry controllers. */
export function keyOf(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}
