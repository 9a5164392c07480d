/**
 * The message codes of the analyzers. Codes are stable across releases: a code is never reused
 * for another meaning; retired codes stay reserved.
 */
import type { AnalysisLevel, Finding, MessageType } from './types.js';

function type(code: string, name: string, level: AnalysisLevel, description: string): MessageType {
  return Object.freeze({ code, name, level, description });
}

export const MESSAGES = Object.freeze({
  ReferencedResourceNotFound: type('MESH0101', 'ReferencedResourceNotFound', 'ERROR', 'A resource names another resource (a Gateway, a delegate VirtualService, a namespace) that does not exist.'),
  UnknownDestinationHost: type('MESH0102', 'UnknownDestinationHost', 'WARNING', 'A route destination names a host no service or ServiceEntry visible to its namespace defines.'),
  UnknownDestinationSubset: type('MESH0103', 'UnknownDestinationSubset', 'ERROR', 'A route destination names a subset that no applicable DestinationRule defines.'),
  GatewaySelectorMatchesNothing: type('MESH0104', 'GatewaySelectorMatchesNothing', 'ERROR', 'A Gateway selector matches no workload, so no gateway proxy serves it.'),
  ConflictingDestinationRules: type('MESH0105', 'ConflictingDestinationRules', 'WARNING', 'Several DestinationRules of one namespace apply to the same host; only the oldest takes effect.'),
  ServiceEntryWithoutPorts: type('MESH0106', 'ServiceEntryWithoutPorts', 'WARNING', 'A ServiceEntry declares no ports, so proxies get no listener or cluster for its hosts.'),
  SchemaValidationError: type('MESH0107', 'SchemaValidationError', 'ERROR', 'A resource does not pass validation; the daemon ignores it and keeps the last valid version.'),
  UnknownAnnotation: type('MESH0108', 'UnknownAnnotation', 'INFO', 'An annotation of the mesh domain that the mesh does not know (a typo, or one of another release).'),
  MisplacedAnnotation: type('MESH0109', 'MisplacedAnnotation', 'WARNING', 'A mesh annotation on a kind of resource it has no effect on.'),
  InvalidAnnotation: type('MESH0110', 'InvalidAnnotation', 'WARNING', 'A mesh annotation whose value the mesh cannot read.'),
  DeprecatedAnnotation: type('MESH0111', 'DeprecatedAnnotation', 'INFO', 'A mesh annotation that is deprecated and will go away.'),
  InvalidGatewayCredential: type('MESH0112', 'InvalidGatewayCredential', 'ERROR', 'A Gateway server names a credential Secret that does not exist in the gateway\'s namespace or holds no usable certificate.'),
  ConflictingGateways: type('MESH0113', 'ConflictingGateways', 'ERROR', 'Gateways that select the same gateway workloads declare the same port and host differently; only one of them can be served.'),
  GatewayDuplicateCertificate: type('MESH0114', 'GatewayDuplicateCertificate', 'WARNING', 'Several Gateways serve the same certificate; HTTP/2 clients may reuse a connection for the other Gateway\'s hosts and get 404s.'),
  GatewayPortNotDefinedOnService: type('MESH0115', 'GatewayPortNotDefinedOnService', 'WARNING', 'A Gateway server port is not a port of any Service in front of the gateway workloads, so no traffic reaches it.'),
  NamespaceNotInjected: type('MESH0116', 'NamespaceNotInjected', 'INFO', 'A namespace with workloads is not labelled for proxy injection, so its pods join the mesh without proxies.'),
  PodMissingProxy: type('MESH0117', 'PodMissingProxy', 'WARNING', 'A pod of an injected namespace runs without the mesh proxy (created before injection was on, or injection failed).'),
  NamespaceMultipleInjectionLabels: type('MESH0118', 'NamespaceMultipleInjectionLabels', 'WARNING', 'A namespace carries both the mesh-injection label and the revision label; which one wins is not obvious.'),
  ProxyImageMismatch: type('MESH0119', 'ProxyImageMismatch', 'WARNING', 'A pod runs a proxy image other than the one the injector currently injects; restart it to pick up the new proxy.'),
  PortNameIsNotUnderNamingConvention: type('MESH0120', 'PortNameIsNotUnderNamingConvention', 'INFO', 'A Service port neither named <protocol>[-<suffix>] nor given an appProtocol, so the proxy has to sniff its protocol.'),
  NoMatchingWorkloadsFound: type('MESH0121', 'NoMatchingWorkloadsFound', 'WARNING', 'A workload selector (Sidecar, AuthorizationPolicy, Telemetry, DestinationRule subset) matches no workload in its namespace.'),
  ConflictingSidecarWorkloadSelectors: type('MESH0122', 'ConflictingSidecarWorkloadSelectors', 'ERROR', 'Several Sidecars select the same workload; which one applies is undefined.'),
  MultipleSidecarsWithoutWorkloadSelectors: type('MESH0123', 'MultipleSidecarsWithoutWorkloadSelectors', 'ERROR', 'Several Sidecars of one namespace have no workload selector; which one applies is undefined.'),
  VirtualServiceDestinationPortSelectorRequired: type('MESH0124', 'VirtualServiceDestinationPortSelectorRequired', 'ERROR', 'A route of a gateway VirtualService sends to a service with several ports without naming the port.'),
  VirtualServiceHostNotFoundInGateway: type('MESH0125', 'VirtualServiceHostNotFoundInGateway', 'WARNING', 'A VirtualService host is not among the hosts of a Gateway it is bound to, so the gateway never routes it.'),
  ConflictingMeshGatewayVirtualServiceHosts: type('MESH0126', 'ConflictingMeshGatewayVirtualServiceHosts', 'ERROR', 'Several VirtualServices bound to the mesh gateway define the same host for the same namespaces; only one is used.'),
  VirtualServiceUnreachableRule: type('MESH0127', 'VirtualServiceUnreachableRule', 'WARNING', 'A route can never match: a route before it matches every request, or the same requests.'),
  VirtualServiceIneffectiveMatch: type('MESH0128', 'VirtualServiceIneffectiveMatch', 'INFO', 'A match of a route repeats a match of an earlier route, so it never takes effect.'),
  JwtClaimBasedRoutingWithoutRequestAuthN: type('MESH0129', 'JwtClaimBasedRoutingWithoutRequestAuthN', 'ERROR', 'A route matches on JWT claims, but no RequestAuthentication validates tokens for the gateway workloads.'),
  ReferencedInternalGateway: type('MESH0130', 'ReferencedInternalGateway', 'WARNING', 'A VirtualService names a Gateway the mesh derived from a gateway-api Gateway; name the gateway-api Gateway instead.'),
  DeploymentAssociatedToMultipleServices: type('MESH0131', 'DeploymentAssociatedToMultipleServices', 'WARNING', 'The pods of a Deployment are behind several Services that use the same port number with different protocols.'),
  InvalidApplicationUID: type('MESH0132', 'InvalidApplicationUID', 'WARNING', 'An application container runs as uid 1337, the proxy\'s uid: its traffic bypasses the proxy.'),
  NoServerCertificateVerification: type('MESH0133', 'NoServerCertificateVerification', 'ERROR', 'A DestinationRule originates TLS without CA certificates, so the server\'s certificate is not verified.'),
  ServiceEntryAddressesRequired: type('MESH0134', 'ServiceEntryAddressesRequired', 'WARNING', 'A ServiceEntry with non-HTTP ports has no addresses, so its TCP traffic cannot be told apart from other traffic to the port.'),
  ConflictingServiceProtocols: type('MESH0135', 'ConflictingServiceProtocols', 'ERROR', 'Several services define the same host and port with different protocols.'),
  EnvoyFilterUsesRelativeOperation: type('MESH0136', 'EnvoyFilterUsesRelativeOperation', 'WARNING', 'An EnvoyFilter inserts relative to another filter without a priority, so its result depends on the order filters are applied.'),
  EnvoyFilterOperationNotApplicable: type('MESH0137', 'EnvoyFilterOperationNotApplicable', 'ERROR', 'An EnvoyFilter patch operation has no effect on what it applies to.'),
  InvalidTelemetryProvider: type('MESH0138', 'InvalidTelemetryProvider', 'WARNING', 'A Telemetry names no provider and the mesh has no default provider, so it is ignored.'),
  MultipleTelemetriesWithoutWorkloadSelectors: type('MESH0139', 'MultipleTelemetriesWithoutWorkloadSelectors', 'ERROR', 'Several Telemetries of one namespace have no selector; which one applies is undefined.'),
  IneffectiveSelector: type('MESH0140', 'IneffectiveSelector', 'WARNING', 'A workload selector picks gateway-api gateway pods, which policies reach by targetRefs only.'),
  IneffectivePolicy: type('MESH0141', 'IneffectivePolicy', 'WARNING', 'A policy rule made only of negative conditions matches far more than it names (every other source or operation).'),
});

export type MessageName = keyof typeof MESSAGES;

/** All message types, ordered by code. */
export const MESSAGE_TYPES: ReadonlyArray<MessageType> = Object.freeze(Object.values(MESSAGES).sort((a, b) => a.code.localeCompare(b.code)));

/** A finding of `type` about an object. */
export function finding(
  type: MessageType,
  object: { readonly meta: { readonly gvk: { readonly kind: string }; readonly namespace: string; readonly name: string } },
  message: string,
  path?: string,
): Finding {
  return {
    kind: object.meta.gvk.kind,
    namespace: object.meta.namespace,
    name: object.meta.name,
    code: type.code,
    level: type.level,
    message,
    ...(path ? { path } : {}),
  };
}
