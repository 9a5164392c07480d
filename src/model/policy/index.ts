/**
 * The security policies of one snapshot, indexed by the workloads they apply to (docs/adr/0080):
 * PeerAuthentication (mesh, namespace and workload level, port-level overrides, UNSET inheritance)
 * and AuthorizationPolicy (namespace or root namespace, selector or targetRefs). Built once per
 * PushContext; per-workload answers are memoized by namespace and labels, and each carries a `key`
 * naming exactly the inputs it came from, for the generators' cache keys.
 */
import type { AuthorizationPolicy, DestinationRule, Gateway, JWTRule, PeerAuthentication, RequestAuthentication } from '../../gen/config/schemas.js';
import type { ConfigObject, ConfigStore } from '../../config/types.js';
import { objectId } from '../../util/identity.js';
import type { AuthzAction, AuthzPolicy } from './types.js';
import { Dep, recordDep } from '../derived.js';
import type { MeshSettings } from '../mesh-settings.js';
import { labelsMatch } from '../service.js';
import { jwksProblem } from './jwks.js';
import { credentialDiagnostics, policyDiagnostics, proxylessTlsDiagnostics, type PolicyDiagnostic, type ServiceExists } from './diagnostics.js';

export type MtlsMode = 'STRICT' | 'PERMISSIVE' | 'DISABLE';

/** The annotation that makes an AuthorizationPolicy a dry run (CONVENTIONS.md). */
export const DRY_RUN_ANNOTATION = 'mesh.io/dry-run';
/** Labels gateway-api deployments carry: what `targetRefs` to a Gateway or GatewayClass select. */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';
export const GATEWAY_CLASS_LABEL = 'gateway.networking.k8s.io/gateway-class-name';

/** A workload as policies see it. */
export interface PolicyWorkload {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** The mutual TLS a workload requires of its inbound traffic. */
export interface WorkloadMtls {
  /** Ports without a port-level setting. */
  readonly mode: MtlsMode;
  /** Port-level settings (workload ports), sorted by port. */
  readonly ports: ReadonlyArray<readonly [number, MtlsMode]>;
  /** `mode` plus the port settings: equal keys, equal behaviour. */
  readonly key: string;
}

export function mtlsModeForPort(m: WorkloadMtls, port: number): MtlsMode {
  return m.ports.find(([p]) => p === port)?.[1] ?? m.mode;
}

export type { AuthzAction, AuthzPolicy };

/** The authorization policies of one workload, ordered by namespace then name. */
export interface WorkloadAuthz {
  readonly policies: ReadonlyArray<AuthzPolicy>;
  readonly key: string;
}

/** One JWT rule of a RequestAuthentication, with where it came from. */
export interface JwtRuleRef {
  readonly namespace: string;
  readonly name: string;
  /** Index in the RequestAuthentication's `jwtRules`. */
  readonly index: number;
  readonly rule: JWTRule;
  /** The rule's inline `jwks` when it is a usable key set (checked once per snapshot); undefined otherwise. */
  readonly usableJwks?: string;
}

/** The JWT rules that apply to a workload (root namespace, then its namespace; by name). */
export interface WorkloadAuthn {
  readonly rules: ReadonlyArray<JwtRuleRef>;
  readonly key: string;
}

interface RequestAuthnEntry {
  readonly namespace: string;
  readonly source: ConfigObject<RequestAuthentication>;
  readonly rules: ReadonlyArray<JwtRuleRef>;
}

interface PeerAuthnEntry {
  readonly source: ConfigObject<PeerAuthentication>;
  readonly selector?: Readonly<Record<string, string>>;
}

export interface PolicyIndexInput {
  readonly configs: ConfigStore;
  readonly mesh: MeshSettings;
  /** Whether a CUSTOM provider's service exists (diagnostics only). */
  readonly serviceExists?: ServiceExists;
}

const byAge = (a: ConfigObject, b: ConfigObject): number =>
  (a.meta.creationTimestamp ?? '').localeCompare(b.meta.creationTimestamp ?? '') || a.meta.namespace.localeCompare(b.meta.namespace) || a.meta.name.localeCompare(b.meta.name);
const byName = (a: ConfigObject, b: ConfigObject): number => a.meta.namespace.localeCompare(b.meta.namespace) || a.meta.name.localeCompare(b.meta.name);

const hasLabels = (s: Readonly<Record<string, string>> | undefined): s is Readonly<Record<string, string>> => s !== undefined && Object.keys(s).length > 0;

function labelsKey(labels: Readonly<Record<string, string>>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

/**
 * The store's lists a policy index reads its policies from, in one order: a snapshot whose lists
 * are these very objects (and whose other inputs are the same) may keep the previous index.
 */
export function policyInputs(configs: ConfigStore): readonly [ReadonlyArray<ConfigObject<PeerAuthentication>>, ReadonlyArray<ConfigObject<AuthorizationPolicy>>, ReadonlyArray<ConfigObject<RequestAuthentication>>] {
  return [configs.list<PeerAuthentication>('PeerAuthentication'), configs.list<AuthorizationPolicy>('AuthorizationPolicy'), configs.list<RequestAuthentication>('RequestAuthentication')];
}

export class PolicyIndex {
  readonly mesh: MeshSettings;
  /** Every PeerAuthentication by namespace, oldest first. */
  private readonly peerAuthn = new Map<string, PeerAuthnEntry[]>();
  private readonly authz = new Map<string, AuthzPolicy[]>();
  private readonly authn = new Map<string, RequestAuthnEntry[]>();
  /** Every `jwksUri` of a JWT rule without inline `jwks`: what the JWKS resolver fetches. */
  readonly jwksUris: ReadonlySet<string>;
  private readonly memo = new Map<string, unknown>();
  /** Identity of every PeerAuthentication: what auto mutual TLS toward endpoints depends on. */
  readonly peerAuthnKey: string;
  /** Whether any AuthorizationPolicy exists (cheap path for meshes without). */
  readonly hasAuthz: boolean;
  /** Computes `diagnostics` on first read, from the inputs the index was built from. */
  private diagnose: (() => ReadonlyArray<PolicyDiagnostic>) | undefined;
  private diagnosed: ReadonlyArray<PolicyDiagnostic> = [];
  /**
   * The policy objects this index was built from (PeerAuthentication, AuthorizationPolicy,
   * RequestAuthentication): a snapshot compares them with the previous one's to see whether any
   * policy changed.
   */
  readonly sources: ReadonlyArray<ReadonlyArray<ConfigObject<unknown>>>;

  constructor(input: PolicyIndexInput) {
    this.mesh = input.mesh;
    const [paList, apList, raList] = policyInputs(input.configs);
    const pas = [...paList].sort(byAge);
    for (const pa of pas) {
      const list = this.peerAuthn.get(pa.meta.namespace) ?? [];
      list.push({ source: pa, selector: hasLabels(pa.spec.selector?.matchLabels) ? pa.spec.selector.matchLabels : undefined });
      this.peerAuthn.set(pa.meta.namespace, list);
    }
    this.peerAuthnKey = pas.map((p) => objectId(p)).join(',');
    const aps = [...apList].sort(byName);
    for (const ap of aps) {
      const action = ap.spec.action ?? 'ALLOW';
      const entry: AuthzPolicy = {
        source: ap,
        namespace: ap.meta.namespace,
        name: ap.meta.name,
        action,
        dryRun: (ap.meta.annotations[DRY_RUN_ANNOTATION] ?? '').toLowerCase() === 'true',
        rules: ap.spec.rules ?? [],
        ...(action === 'CUSTOM' && ap.spec.provider?.name ? { provider: ap.spec.provider.name } : {}),
      };
      const list = this.authz.get(entry.namespace) ?? [];
      list.push(entry);
      this.authz.set(entry.namespace, list);
    }
    this.hasAuthz = aps.length > 0;
    const ras = [...raList].sort(byName);
    const uris = new Set<string>();
    for (const ra of ras) {
      const list = this.authn.get(ra.meta.namespace) ?? [];
      const rules = (ra.spec.jwtRules ?? []).map((rule, index): JwtRuleRef => {
        const usable = rule.jwks !== undefined && jwksProblem(rule.jwks) === undefined;
        return { namespace: ra.meta.namespace, name: ra.meta.name, index, rule, ...(usable ? { usableJwks: rule.jwks } : {}) };
      });
      list.push({ namespace: ra.meta.namespace, source: ra, rules });
      this.authn.set(ra.meta.namespace, list);
      for (const r of ra.spec.jwtRules ?? []) if (r.jwks === undefined && r.jwksUri) uris.add(r.jwksUri);
    }
    this.jwksUris = uris;
    this.sources = [pas, aps, ras];
    // each a scan of every policy, DestinationRule and Gateway: done when the model logs them, after
    // the push they came with has been handed on, not while the snapshot is built (docs/adr/0206)
    const rules = input.configs.list<DestinationRule>('DestinationRule');
    const gateways = input.configs.list<Gateway>('Gateway');
    this.diagnose = () => [
      ...policyDiagnostics([...this.authz.values()].flat(), ras, input.mesh, input.serviceExists),
      ...credentialDiagnostics(rules, gateways),
      ...proxylessTlsDiagnostics(rules),
    ];
  }

  /** Problems a user should hear about (logged by the model when they first appear). */
  get diagnostics(): ReadonlyArray<PolicyDiagnostic> {
    const diagnose = this.diagnose;
    if (diagnose) {
      this.diagnose = undefined;
      this.diagnosed = diagnose();
    }
    return this.diagnosed;
  }

  private memoize<T>(key: string, compute: () => T): T {
    if (this.memo.has(key)) return this.memo.get(key) as T;
    const v = compute();
    this.memo.set(key, v);
    return v;
  }

  /**
   * The mutual TLS a workload requires: the oldest workload-level policy of its namespace whose
   * selector matches, over the oldest namespace-level one, over the oldest mesh-level one (root
   * namespace, no selector); UNSET inherits from the level above; nothing set means PERMISSIVE.
   * Port-level settings come from the workload-level policy (UNSET ports inherit its mode).
   */
  mtlsFor(w: PolicyWorkload): WorkloadMtls {
    // modes come from PeerAuthentications alone: an edit of another policy kind leaves them
    recordDep(Dep.peerAuthn);
    return this.memoize(`pa|${w.namespace}|${labelsKey(w.labels)}`, () => {
      const inNs = this.peerAuthn.get(w.namespace) ?? [];
      const mesh = (this.peerAuthn.get(this.mesh.rootNamespace) ?? []).find((p) => !p.selector);
      const ns = w.namespace === this.mesh.rootNamespace ? undefined : inNs.find((p) => !p.selector);
      const workload = inNs.find((p) => p.selector && labelsMatch(p.selector, w.labels));
      let mode: MtlsMode = 'PERMISSIVE';
      for (const level of [mesh, ns, workload]) {
        const m = level?.source.spec.mtls?.mode;
        if (m && m !== 'UNSET') mode = m;
      }
      const ports: Array<readonly [number, MtlsMode]> = [];
      for (const [port, setting] of Object.entries(workload?.source.spec.portLevelMtls ?? {})) {
        const m = setting.mode;
        ports.push([Number(port), m && m !== 'UNSET' ? m : mode]);
      }
      ports.sort((a, b) => a[0] - b[0]);
      return { mode, ports, key: `${mode}${ports.map(([p, m]) => `|${p}=${m}`).join('')}` };
    });
  }

  /** Whether any PeerAuthentication exists (without one every port is PERMISSIVE). Records the dependency. */
  hasPeerAuthn(): boolean {
    recordDep(Dep.peerAuthn);
    return this.peerAuthn.size > 0;
  }

  /** The AuthorizationPolicies that apply to a workload (all actions, dry-run ones included). */
  authzFor(w: PolicyWorkload): WorkloadAuthz {
    recordDep(Dep.policies);
    if (!this.hasAuthz) return EMPTY_AUTHZ;
    return this.memoize(`ap|${w.namespace}|${labelsKey(w.labels)}`, () => {
      const policies = this.applicable(this.authz, w, (p) => p.source.spec);
      return { policies, key: policies.map((p) => objectId(p.source)).join(',') };
    });
  }

  /** The JWT rules of the RequestAuthentications that apply to a workload (docs/adr/0100). */
  authnFor(w: PolicyWorkload): WorkloadAuthn {
    recordDep(Dep.policies);
    if (this.authn.size === 0) return EMPTY_AUTHN;
    return this.memoize(`ra|${w.namespace}|${labelsKey(w.labels)}`, () => {
      const applicable = this.applicable(this.authn, w, (p) => p.source.spec);
      const rules = applicable.flatMap((ra) => ra.rules);
      return { rules, key: applicable.map((p) => objectId(p.source)).join(',') };
    });
  }

  /** Policies of the workload's namespace and of the root namespace whose selector or targets match. */
  private applicable<P extends { readonly namespace: string }>(
    byNs: ReadonlyMap<string, P[]>,
    w: PolicyWorkload,
    spec: (p: P) => Pick<AuthorizationPolicy, 'selector' | 'targetRef' | 'targetRefs'>,
  ): P[] {
    const out: P[] = [];
    const namespaces = w.namespace === this.mesh.rootNamespace ? [w.namespace] : [this.mesh.rootNamespace, w.namespace];
    for (const ns of namespaces) {
      for (const p of byNs.get(ns) ?? []) if (this.selects(spec(p), p.namespace, w)) out.push(p);
    }
    return out;
  }

  private selects(spec: Pick<AuthorizationPolicy, 'selector' | 'targetRef' | 'targetRefs'>, policyNs: string, w: PolicyWorkload): boolean {
    const targets = spec.targetRefs && spec.targetRefs.length > 0 ? spec.targetRefs : spec.targetRef ? [spec.targetRef] : [];
    if (targets.length > 0) {
      return targets.some((t) => {
        if (t.group !== 'gateway.networking.k8s.io') return false; // Service/ServiceEntry targets bind to waypoints, which this mesh does not run
        if (t.kind === 'Gateway') return w.namespace === (t.namespace || policyNs) && w.labels[GATEWAY_NAME_LABEL] === t.name;
        if (t.kind === 'GatewayClass') return policyNs === this.mesh.rootNamespace && w.labels[GATEWAY_CLASS_LABEL] === t.name;
        return false;
      });
    }
    const selector = spec.selector?.matchLabels;
    return !hasLabels(selector) || labelsMatch(selector, w.labels);
  }
}

const EMPTY_AUTHZ: WorkloadAuthz = Object.freeze({ policies: Object.freeze([]) as ReadonlyArray<AuthzPolicy>, key: '' });
const EMPTY_AUTHN: WorkloadAuthn = Object.freeze({ rules: Object.freeze([]) as ReadonlyArray<JwtRuleRef>, key: '' });
/** No request authentication (`--plugins` without `authn`). */
export const NO_AUTHN = EMPTY_AUTHN;
/** No authorization (`--plugins` without `authz`). */
export const NO_AUTHZ = EMPTY_AUTHZ;
