/**
 * AuthorizationPolicy CUSTOM → external authorization (docs/adr/0101). Per provider a workload's
 * CUSTOM policies name, two filters:
 *
 * 1. an RBAC filter with only shadow rules (the policies' rules, renamed `mesh-ext-authz-…`): it
 *    enforces nothing, but when a rule matches it writes the matched policy's name to its dynamic
 *    metadata as `<prefix>shadow_effective_policy_id`;
 * 2. the ext_authz filter of the provider, enabled only when that metadata holds such a name
 *    (`filter_enabled_metadata`): only requests a CUSTOM rule matches are sent to the provider.
 *
 * HTTP chains call HTTP and gRPC providers; TCP chains call gRPC providers through the network
 * ext_authz filter (an HTTP provider cannot check a TCP connection: the policy does not apply to
 * TCP ports, as the public API says, and the model logs it).
 */
import type { MeshConfig_ExtensionProvider } from '../../../gen/config/schemas.js';
import { RBAC_Action } from '../../../gen/envoy/config/rbac/v3/rbac.js';
import { ApiVersion } from '../../../gen/envoy/config/core/v3/config_source.js';
import { RBAC as HttpRbac } from '../../../gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { RBAC as NetworkRbac } from '../../../gen/envoy/extensions/filters/network/rbac/v3/rbac.js';
import { ExtAuthz as HttpExtAuthz } from '../../../gen/envoy/extensions/filters/http/ext_authz/v3/ext_authz.js';
import { ExtAuthz as NetworkExtAuthz } from '../../../gen/envoy/extensions/filters/network/ext_authz/v3/ext_authz.js';
import type { StringMatcher } from '../../../gen/envoy/type/matcher/v3/string.js';
import type { MetadataMatcher } from '../../../gen/envoy/type/matcher/v3/metadata.js';
import { durationMs } from '../../../util/config-duration.js';
import { duration, pack, type Shape } from '../pack.js';
import { wildcardMatcher, type RbacPolicyShape } from './rbac.js';

type FilterShape = { readonly name: string; readonly typedConfig: ReturnType<typeof pack> };

/** A CUSTOM provider resolved for one proxy: the mesh config entry and the outbound cluster of its service. */
export interface ExtAuthzTarget {
  readonly provider: MeshConfig_ExtensionProvider;
  readonly kind: 'http' | 'grpc';
  readonly host: string;
  readonly port: number;
  readonly cluster: string;
}

/** Name prefix of the shadow policies and the value the ext_authz filter is enabled by. */
export const EXT_AUTHZ_POLICY_PREFIX = 'mesh-ext-authz-';
/** Metadata namespaces the RBAC filters write under (Envoy's filter names, whatever the configured name). */
const RBAC_HTTP_METADATA = 'envoy.filters.http.rbac';
const RBAC_NETWORK_METADATA = 'envoy.filters.network.rbac';
/** The public API's default time allowed for a check. */
const DEFAULT_TIMEOUT_MS = 600_000;

const statPrefix = (i: number): string => `mesh_ext_authz_${i}_`;

function enabledBy(filter: string, i: number): Shape<MetadataMatcher> {
  return { filter, path: [{ key: `${statPrefix(i)}shadow_effective_policy_id` }], value: { stringMatch: { prefix: EXT_AUTHZ_POLICY_PREFIX } } };
}

function renamed(policies: Record<string, RbacPolicyShape>): Record<string, RbacPolicyShape> {
  return Object.fromEntries(Object.entries(policies).map(([k, v]) => [`${EXT_AUTHZ_POLICY_PREFIX}${k}`, v]));
}

const headerPatterns = (names: ReadonlyArray<string> | undefined): { patterns: Shape<StringMatcher>[] } | undefined =>
  names && names.length > 0 ? { patterns: names.map((n) => wildcardMatcher(n, { ignoreCase: true })) } : undefined;

function timeoutOf(p: { timeout?: string }): ReturnType<typeof duration> {
  return duration(p.timeout ? durationMs(p.timeout) : DEFAULT_TIMEOUT_MS);
}

function grpcService(t: ExtAuthzTarget, timeout: ReturnType<typeof duration>) {
  return { envoyGrpc: { clusterName: t.cluster, authority: t.host }, timeout };
}

function httpExtAuthz(t: ExtAuthzTarget, i: number): Shape<HttpExtAuthz> {
  const common = {
    transportApiVersion: ApiVersion.V3,
    filterEnabledMetadata: enabledBy(RBAC_HTTP_METADATA, i),
  };
  const h = t.provider.envoyExtAuthzHttp;
  if (h) {
    const body = h.includeRequestBodyInCheck;
    return {
      ...common,
      failureModeAllow: h.failOpen ?? false,
      ...(h.statusOnError ? { statusOnError: { code: Number(h.statusOnError) } } : {}),
      ...(body ? { withRequestBody: { maxRequestBytes: body.maxRequestBytes ?? 0, allowPartialMessage: body.allowPartialMessage ?? false, packAsBytes: body.packAsBytes ?? false } } : {}),
      allowedHeaders: headerPatterns(h.includeRequestHeadersInCheck),
      httpService: {
        serverUri: { uri: `http://${t.host}:${t.port}`, cluster: t.cluster, timeout: timeoutOf(h) },
        pathPrefix: h.pathPrefix ?? '',
        authorizationRequest: { headersToAdd: Object.entries(h.includeAdditionalHeadersInCheck ?? {}).map(([key, value]) => ({ key, value })) },
        authorizationResponse: {
          allowedUpstreamHeaders: headerPatterns(h.headersToUpstreamOnAllow),
          allowedClientHeaders: headerPatterns(h.headersToDownstreamOnDeny),
          allowedClientHeadersOnSuccess: headerPatterns(h.headersToDownstreamOnAllow),
        },
      },
    };
  }
  const g = t.provider.envoyExtAuthzGrpc!;
  const body = g.includeRequestBodyInCheck;
  return {
    ...common,
    failureModeAllow: g.failOpen ?? false,
    ...(g.statusOnError ? { statusOnError: { code: Number(g.statusOnError) } } : {}),
    ...(body ? { withRequestBody: { maxRequestBytes: body.maxRequestBytes ?? 0, allowPartialMessage: body.allowPartialMessage ?? false, packAsBytes: body.packAsBytes ?? false } } : {}),
    grpcService: grpcService(t, timeoutOf(g)),
  };
}

/** One provider's CUSTOM rules and where they go. */
export interface CustomGroup {
  readonly target: ExtAuthzTarget;
  readonly policies: Record<string, RbacPolicyShape>;
}

/** The shadow RBAC + ext_authz pairs of an HTTP chain, in order, to go first. */
export function httpExtAuthzFilters(groups: ReadonlyArray<CustomGroup>): FilterShape[] {
  return groups.flatMap((g, i) => [
    {
      name: `envoy.filters.http.rbac.custom.${i}`,
      typedConfig: pack('envoy.extensions.filters.http.rbac.v3.RBAC', HttpRbac, {
        shadowRules: { action: RBAC_Action.ALLOW, policies: renamed(g.policies) },
        shadowRulesStatPrefix: statPrefix(i),
      }),
    },
    { name: `envoy.filters.http.ext_authz.${i}`, typedConfig: pack('envoy.extensions.filters.http.ext_authz.v3.ExtAuthz', HttpExtAuthz, httpExtAuthz(g.target, i)) },
  ]);
}

/** The same for a TCP chain: gRPC providers only (the caller leaves HTTP ones out). */
export function networkExtAuthzFilters(groups: ReadonlyArray<CustomGroup>, stat: string): FilterShape[] {
  return groups.flatMap((g, i) => {
    const grpc = g.target.provider.envoyExtAuthzGrpc;
    if (!grpc) return [];
    return [
      {
        name: `envoy.filters.network.rbac.custom.${i}`,
        typedConfig: pack('envoy.extensions.filters.network.rbac.v3.RBAC', NetworkRbac, {
          statPrefix: stat,
          shadowRules: { action: RBAC_Action.ALLOW, policies: renamed(g.policies) },
          shadowRulesStatPrefix: statPrefix(i),
        }),
      },
      {
        name: `envoy.filters.network.ext_authz.${i}`,
        typedConfig: pack('envoy.extensions.filters.network.ext_authz.v3.ExtAuthz', NetworkExtAuthz, {
          statPrefix: stat,
          grpcService: grpcService(g.target, timeoutOf(grpc)),
          failureModeAllow: grpc.failOpen ?? false,
          transportApiVersion: ApiVersion.V3,
          filterEnabledMetadata: enabledBy(RBAC_NETWORK_METADATA, i),
        }),
      },
    ];
  });
}
