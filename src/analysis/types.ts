/**
 * The seam of the analyzers: what they read (a config snapshot, the services of the registries,
 * optionally the workloads) and what they report (findings with a stable code, a level and a
 * message, attached to one config object). Shared by the daemon's status controller
 * (DISC_ENABLE_ANALYSIS) and `meshctl analyze`.
 */
import type { ConfigStore } from '../config/types.js';
import type { MeshSettings } from '../model/mesh-settings.js';
import type { Service } from '../model/service.js';
import type { KubeWorld } from './world.js';

/** Severity as written into `status.validationMessages[].level` (the CRD's enum). */
export type AnalysisLevel = 'ERROR' | 'WARNING' | 'INFO';

/** One finding about one object, as written into its status. */
export interface AnalysisMessage {
  /** Stable code, e.g. `MESH0103`. */
  readonly code: string;
  readonly level: AnalysisLevel;
  readonly message: string;
  /** Field the finding is about, e.g. `spec.http[0].route[1].destination.subset`. */
  readonly path?: string;
}

/** A finding and the object it is about. */
export interface Finding extends AnalysisMessage {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** A workload (pod or workload entry) as far as selectors care. */
export interface WorkloadInfo {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Pod or WorkloadEntry name, when known. */
  readonly name?: string;
}

export interface AnalysisInput {
  /** The config snapshot: every mesh config object. */
  readonly configs: ConfigStore;
  /** Services of all registries (Kubernetes Services, ServiceEntries, fixed services). */
  readonly services: ReadonlyArray<Service>;
  /**
   * Workloads of the mesh, for selector checks. Undefined means "not known" (e.g. files only):
   * analyzers that need them stay silent rather than report every selector as matching nothing.
   */
  readonly workloads?: ReadonlyArray<WorkloadInfo>;
  readonly mesh: MeshSettings;
  /** DISC_SCOPE_GATEWAY_TO_NAMESPACE: a gateway selector picks workloads of its own namespace only. */
  readonly scopeGatewayToNamespace?: boolean;
  /**
   * The Kubernetes objects around the config (namespaces, pods, deployments, Services, Secrets,
   * ConfigMaps, gateway-api Gateways). Undefined when not known: the analyzers that need them
   * stay silent.
   */
  readonly kube?: KubeWorld;
  /**
   * Config objects that failed validation but are analysed for what can be analysed (their
   * refused fields left out). They are in `configs` too; this set tells them apart.
   */
  readonly invalid?: ReadonlySet<string>;
}

/** The registry entry of a message code. */
export interface MessageType {
  readonly code: string;
  /** CamelCase name, e.g. `UnknownDestinationSubset`. */
  readonly name: string;
  readonly level: AnalysisLevel;
  readonly description: string;
}

export interface Analyzer {
  /** e.g. `virtualservice.destinations`. */
  readonly name: string;
  readonly description: string;
  /** Codes this analyzer may report. */
  readonly codes: ReadonlyArray<string>;
  analyze(input: AnalysisInput, context: AnalysisContext): Finding[];
}

/** Lookups shared by the analyzers of one run (built once per run). */
export interface AnalysisContext {
  /**
   * True when some service or ServiceEntry host covers `hostname` (an FQDN); with
   * `viewerNamespace`, only the ones exported to that namespace count.
   */
  hostKnown(hostname: string, viewerNamespace?: string): boolean;
  /** The services (registries and ServiceEntries) whose hostname is exactly `hostname`. */
  servicesOf(hostname: string): ReadonlyArray<Service>;
  /** Namespace of the service that owns `hostname`, if one does. */
  namespaceOfHost(hostname: string): string | undefined;
  /**
   * The DestinationRule the model applies to traffic from a workload of `viewerNamespace` (no
   * labels) to `hostname`, with the names of its subsets.
   */
  destinationRule(viewerNamespace: string, hostname: string): { readonly namespace: string; readonly name: string; readonly subsets: ReadonlyArray<string> } | undefined;
}

/** `Kind/namespace/name`: the key findings are grouped by (and the status controller's work-queue key). */
export function objectRef(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}
