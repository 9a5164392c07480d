/**
 * What each AuthorizationPolicy attribute needs from the data plane, written once: which source and
 * operation fields and which condition keys exist only on HTTP requests (a TCP port cannot see them),
 * and which ones proxyless gRPC servers cannot evaluate. The translation (src/xds/envoy/security/)
 * and the diagnostics the model logs (./diagnostics.ts) both read this table.
 */
import type { Condition, Operation, Rule, Source } from '../../gen/config/schemas.js';
import { parseConditionKey, type ConditionKey } from '../../config/validation/authz-keys.js';

export { parseConditionKey, type ConditionKey };

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
