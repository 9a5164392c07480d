/**
 * Registry of the config kinds: API coordinates and schema (generated from the protos) joined with
 * the hand-written semantic checks of src/config/validation/.
 */
import type { z } from 'zod';
import { configKinds, type ConfigKindName, type ConfigKindSpecs } from '../gen/config/schemas.js';
import type { GroupVersionKind } from './types.js';
import { checkAnnotations } from './validation/annotations.js';
import type { ConfigIssue, ValidationContext } from './validation/common.js';
import { validateDestinationRule } from './validation/destination-rule.js';
import { validateEnvoyFilter, validateProxyConfig } from './validation/extensions.js';
import { validateGateway } from './validation/gateway.js';
import { validateAuthorizationPolicy, validatePeerAuthentication, validateRequestAuthentication } from './validation/security.js';
import { validateServiceEntry, validateWorkloadEntry, validateWorkloadGroup } from './validation/service-entry.js';
import { validateSidecar } from './validation/sidecar.js';
import { validateTelemetry } from './validation/telemetry.js';
import { validateVirtualService } from './validation/virtual-service.js';

export type { ConfigIssue, ConfigKindName, ConfigKindSpecs, ValidationContext };

export interface KindDefinition<S = unknown> {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly gvk: GroupVersionKind;
  /** `group/version`, as written in a document's `apiVersion`. */
  readonly apiVersion: string;
  /** Structural schema of the spec (unknown fields, wrong types, missing required fields). */
  readonly schema: z.ZodType<S>;
  /**
   * Semantic checks of a spec that passed the schema, with what is known of the object (its
   * namespace for target references, its annotations); paths start with `spec` or `metadata`.
   * Issues with `level: 'warning'` do not refuse the object.
   */
  validate(spec: S, context?: ValidationContext): ConfigIssue[];
}

type Validators = { readonly [K in ConfigKindName]: (spec: ConfigKindSpecs[K], context?: ValidationContext) => ConfigIssue[] };

const validators: Validators = {
  AuthorizationPolicy: (s, c) => validateAuthorizationPolicy(s, 'spec', c),
  DestinationRule: (s) => validateDestinationRule(s),
  EnvoyFilter: (s, c) => validateEnvoyFilter(s, 'spec', c),
  Gateway: (s) => validateGateway(s),
  PeerAuthentication: (s) => validatePeerAuthentication(s),
  ProxyConfig: (s) => validateProxyConfig(s),
  RequestAuthentication: (s, c) => validateRequestAuthentication(s, 'spec', c),
  ServiceEntry: (s) => validateServiceEntry(s),
  Sidecar: (s) => validateSidecar(s),
  Telemetry: (s, c) => validateTelemetry(s, 'spec', c),
  VirtualService: (s) => validateVirtualService(s),
  WorkloadEntry: (s) => validateWorkloadEntry(s),
  WorkloadGroup: (s) => validateWorkloadGroup(s),
};

function define<K extends ConfigKindName>(name: K): KindDefinition<ConfigKindSpecs[K]> {
  const d = configKinds[name];
  const gvk: GroupVersionKind = Object.freeze({ group: d.group, version: d.version, kind: d.kind });
  const validate = validators[name];
  return Object.freeze({
    group: d.group,
    version: d.version,
    kind: d.kind,
    plural: d.plural,
    namespaced: d.namespaced,
    gvk,
    apiVersion: `${d.group}/${d.version}`,
    schema: d.schema as unknown as z.ZodType<ConfigKindSpecs[K]>,
    validate: (spec: ConfigKindSpecs[K], context?: ValidationContext) => [
      ...validate(spec, context),
      ...(context ? checkAnnotations(d.kind, context.annotations) : []),
    ],
  });
}

export type KindRegistry = { readonly [K in ConfigKindName]: KindDefinition<ConfigKindSpecs[K]> };

export const KINDS: KindRegistry = Object.freeze(
  Object.fromEntries((Object.keys(configKinds) as ConfigKindName[]).map((name) => [name, define(name)])) as unknown as KindRegistry,
);

/** All kinds, sorted by name. */
export const CONFIG_KINDS: ReadonlyArray<KindDefinition> = Object.freeze(
  (Object.keys(KINDS) as ConfigKindName[]).sort().map((name) => KINDS[name] as KindDefinition),
);

export function isKindName(kind: string): kind is ConfigKindName {
  return Object.prototype.hasOwnProperty.call(KINDS, kind);
}

export function kindByName(kind: string): KindDefinition | undefined {
  return isKindName(kind) ? (KINDS[kind] as KindDefinition) : undefined;
}

/** The kind of a group/version/kind triple, undefined for anything else. */
export function kindByGvk(gvk: GroupVersionKind): KindDefinition | undefined {
  const def = kindByName(gvk.kind);
  return def && def.group === gvk.group && def.version === gvk.version ? def : undefined;
}
