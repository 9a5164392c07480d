/**
 * What each AuthorizationPolicy attribute needs from the data plane, written once: which source and
 * operation fields and which condition keys exist only on HTTP requests (a TCP port cannot see them),
 * and which ones proxyless gRPC servers cannot evaluate. The translation (src/xds/envoy/security/)
 * and the diagnostics the model logs (./diagnostics.ts) both read this table.
 */
import type { Condition, Operation, Rule, Source } from '../../gen/config/schemas.js';

/** Where an attribute can be evaluated. */
export interface AttributeSupport {
  /** Only HTTP requests carry it: dropped from TCP ports. */
  readonly httpOnly: boolean;
  /** gRPC's RBAC engine cannot evaluate it (JWT data, remote addresses, SNI): dropped for proxyless servers. */
  readonly grpcUnsupported: boolean;
}

const HTTP = { httpOnly: true, grpcUnsupported: false } as const;
const HTTP_JWT = { httpOnly: true, grpcUnsupported: true } as const;
const TCP = { httpOnly: false, grpcUnsupported: false } as const;
const TCP_NOT_GRPC = { httpOnly: false, grpcUnsupported: true } as const;

export const SOURCE_FIELDS: Readonly<Record<keyof Source, AttributeSupport>> = {
  principals: TCP,
  notPrincipals: TCP,
  requestPrincipals: HTTP_JWT,
  notRequestPrincipals: HTTP_JWT,
  namespaces: TCP,
  notNamespaces: TCP,
  ipBlocks: TCP,
  notIpBlocks: TCP,
  remoteIpBlocks: TCP_NOT_GRPC,
  notRemoteIpBlocks: TCP_NOT_GRPC,
  serviceAccounts: TCP,
  notServiceAccounts: TCP,
  trustDomains: TCP,
  notTrustDomains: TCP,
};

export const OPERATION_FIELDS: Readonly<Record<keyof Operation, AttributeSupport>> = {
  hosts: HTTP,
  notHosts: HTTP,
  ports: TCP,
  notPorts: TCP,
  methods: HTTP,
  notMethods: HTTP,
  paths: HTTP,
  notPaths: HTTP,
};

/** A condition key, parsed: its attribute and, for `[...]` keys, the bracketed parts. */
export interface ConditionKey {
  readonly attribute:
    | 'request.headers'
    | 'source.ip'
    | 'remote.ip'
    | 'source.namespace'
    | 'source.principal'
    | 'request.auth.principal'
    | 'request.auth.audiences'
    | 'request.auth.presenter'
    | 'request.auth.claims'
    | 'destination.ip'
    | 'destination.port'
    | 'connection.sni';
  /** `request.headers[name]` → [name]; `request.auth.claims[a][b]` → [a, b]. */
  readonly path: ReadonlyArray<string>;
}

const CONDITION_SUPPORT: Readonly<Record<ConditionKey['attribute'], AttributeSupport>> = {
  'request.headers': HTTP,
  'source.ip': TCP,
  'remote.ip': TCP_NOT_GRPC,
  'source.namespace': TCP,
  'source.principal': TCP,
  'request.auth.principal': HTTP_JWT,
  'request.auth.audiences': HTTP_JWT,
  'request.auth.presenter': HTTP_JWT,
  'request.auth.claims': HTTP_JWT,
  'destination.ip': TCP,
  'destination.port': TCP,
  'connection.sni': TCP_NOT_GRPC,
};

/** Parses a condition key; undefined when the key names no attribute the translation knows. */
export function parseConditionKey(key: string): ConditionKey | undefined {
  const bracket = key.indexOf('[');
  const base = bracket < 0 ? key : key.slice(0, bracket);
  if (!(base in CONDITION_SUPPORT)) return undefined;
  const attribute = base as ConditionKey['attribute'];
  const wantsPath = attribute === 'request.headers' || attribute === 'request.auth.claims';
  if (bracket < 0) return wantsPath ? undefined : { attribute, path: [] };
  if (!wantsPath) return undefined;
  const rest = key.slice(bracket);
  const parts = [...rest.matchAll(/\[([^[\]]+)\]/g)].map((m) => m[1]);
  if (parts.length === 0 || parts.map((p) => `[${p}]`).join('') !== rest) return undefined;
  if (attribute === 'request.headers' && parts.length !== 1) return undefined;
  return { attribute, path: parts };
}

export function conditionSupport(key: ConditionKey): AttributeSupport {
  return CONDITION_SUPPORT[key.attribute];
}

/** The attributes of a rule that `where` cannot evaluate, by name (`to.methods`, `when[request.auth.claims[iss]]`). */
export function unsupportedAttributes(rule: Rule, where: 'tcp' | 'grpc'): string[] {
  const bad = (s: AttributeSupport): boolean => (where === 'tcp' ? s.httpOnly : s.grpcUnsupported);
  const out = new Set<string>();
  for (const f of rule.from ?? []) {
    for (const [k, v] of Object.entries(f.source ?? {}) as Array<[keyof Source, unknown]>) {
      if (Array.isArray(v) && v.length > 0 && bad(SOURCE_FIELDS[k])) out.add(`from.${k}`);
    }
  }
  for (const t of rule.to ?? []) {
    for (const [k, v] of Object.entries(t.operation ?? {}) as Array<[keyof Operation, unknown]>) {
      if (Array.isArray(v) && v.length > 0 && bad(OPERATION_FIELDS[k])) out.add(`to.${k}`);
    }
  }
  for (const c of rule.when ?? []) {
    const key = parseConditionKey(c.key);
    if (key && bad(conditionSupport(key))) out.add(`when[${c.key}]`);
  }
  return [...out];
}

/** Condition keys of a rule that name no known attribute. */
export function unknownConditionKeys(rule: Rule): string[] {
  return (rule.when ?? []).map((c: Condition) => c.key).filter((k) => parseConditionKey(k) === undefined);
}
