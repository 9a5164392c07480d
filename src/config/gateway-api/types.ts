/**
 * The gateway-api objects (`gateway.networking.k8s.io`) as this daemon reads them: only the fields
 * the conversion uses, all optional, because the objects come from the API server unvalidated by us
 * (the CRDs' own schemas are the installer's business). Plus the condition shape of their status.
 */
import type { KubeObject } from '../../kube/types.js';

export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';
/** `spec.controllerName` of the GatewayClasses this daemon implements. */
export const CONTROLLER_NAME = 'mesh.io/gateway-controller';
/** Label that binds gateway pods (router proxies) to a Gateway of their namespace. */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';

export interface ObjectReference {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}

export interface GatewayClassObject extends KubeObject {
  readonly spec?: { readonly controllerName?: string };
  readonly status?: unknown;
}

export interface ListenerSpec {
  readonly name?: string;
  readonly hostname?: string;
  readonly port?: number;
  readonly protocol?: string;
  readonly tls?: { readonly mode?: string; readonly certificateRefs?: ReadonlyArray<ObjectReference> };
  readonly allowedRoutes?: {
    readonly namespaces?: { readonly from?: string; readonly selector?: LabelSelector };
    readonly kinds?: ReadonlyArray<{ readonly group?: string; readonly kind?: string }>;
  };
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: ReadonlyArray<{ readonly key?: string; readonly operator?: string; readonly values?: ReadonlyArray<string> }>;
}

export interface GatewayObject extends KubeObject {
  readonly spec?: { readonly gatewayClassName?: string; readonly listeners?: ReadonlyArray<ListenerSpec> };
  readonly status?: unknown;
}

export interface ParentReference {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly sectionName?: string;
  readonly port?: number;
}

export interface BackendRef extends ObjectReference {
  readonly port?: number;
  readonly weight?: number;
  readonly filters?: ReadonlyArray<RouteFilter>;
}

export interface HeaderModifier {
  readonly set?: ReadonlyArray<{ readonly name?: string; readonly value?: string }>;
  readonly add?: ReadonlyArray<{ readonly name?: string; readonly value?: string }>;
  readonly remove?: ReadonlyArray<string>;
}

export interface PathModifier {
  readonly type?: string;
  readonly replaceFullPath?: string;
  readonly replacePrefixMatch?: string;
}

export interface RouteFilter {
  readonly type?: string;
  readonly requestHeaderModifier?: HeaderModifier;
  readonly responseHeaderModifier?: HeaderModifier;
  readonly requestRedirect?: { readonly scheme?: string; readonly hostname?: string; readonly path?: PathModifier; readonly port?: number; readonly statusCode?: number };
  readonly urlRewrite?: { readonly hostname?: string; readonly path?: PathModifier };
  readonly requestMirror?: { readonly backendRef?: BackendRef; readonly percent?: number; readonly fraction?: { readonly numerator?: number; readonly denominator?: number } };
  readonly extensionRef?: ObjectReference;
}

export interface ValueMatch {
  readonly type?: string;
  readonly name?: string;
  readonly value?: string;
}

export interface HTTPRouteMatchSpec {
  readonly path?: { readonly type?: string; readonly value?: string };
  readonly headers?: ReadonlyArray<ValueMatch>;
  readonly queryParams?: ReadonlyArray<ValueMatch>;
  readonly method?: string;
}

export interface GRPCRouteMatchSpec {
  readonly method?: { readonly type?: string; readonly service?: string; readonly method?: string };
  readonly headers?: ReadonlyArray<ValueMatch>;
}

export interface RouteRuleSpec<M> {
  readonly name?: string;
  readonly matches?: ReadonlyArray<M>;
  readonly filters?: ReadonlyArray<RouteFilter>;
  readonly backendRefs?: ReadonlyArray<BackendRef>;
  readonly timeouts?: { readonly request?: string; readonly backendRequest?: string };
}

export interface RouteObject<M> extends KubeObject {
  readonly spec?: {
    readonly parentRefs?: ReadonlyArray<ParentReference>;
    readonly hostnames?: ReadonlyArray<string>;
    readonly rules?: ReadonlyArray<RouteRuleSpec<M>>;
  };
  readonly status?: unknown;
}

export type HTTPRouteObject = RouteObject<HTTPRouteMatchSpec>;
export type GRPCRouteObject = RouteObject<GRPCRouteMatchSpec>;
/** TCPRoute and TLSRoute (v1alpha2): rules carry only backendRefs; TLSRoute hostnames are SNI names. */
export type L4RouteObject = RouteObject<never>;

export interface ReferenceGrantObject extends KubeObject {
  readonly spec?: {
    readonly from?: ReadonlyArray<{ readonly group?: string; readonly kind?: string; readonly namespace?: string }>;
    readonly to?: ReadonlyArray<{ readonly group?: string; readonly kind?: string; readonly name?: string }>;
  };
}

/** A status condition as gateway-api objects carry it (lastTransitionTime is added when written). */
export interface ApiCondition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
  readonly lastTransitionTime?: string;
}

/** apiVersion of each kind this daemon reads (status is written in the same version). */
export function apiVersionOf(kind: string): string {
  return `${GATEWAY_API_GROUP}/${GATEWAY_API_KINDS.find((k) => k.kind === kind)?.version ?? 'v1'}`;
}

/** The kinds read, with their REST coordinates. `required` kinds decide whether support is on. */
export interface GatewayApiKind {
  readonly kind: 'GatewayClass' | 'Gateway' | 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute' | 'ReferenceGrant';
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly required: boolean;
}

export const GATEWAY_API_KINDS: ReadonlyArray<GatewayApiKind> = [
  { kind: 'GatewayClass', version: 'v1', plural: 'gatewayclasses', namespaced: false, required: true },
  { kind: 'Gateway', version: 'v1', plural: 'gateways', namespaced: true, required: true },
  { kind: 'HTTPRoute', version: 'v1', plural: 'httproutes', namespaced: true, required: true },
  { kind: 'GRPCRoute', version: 'v1', plural: 'grpcroutes', namespaced: true, required: false },
  { kind: 'TCPRoute', version: 'v1alpha2', plural: 'tcproutes', namespaced: true, required: false },
  { kind: 'TLSRoute', version: 'v1alpha2', plural: 'tlsroutes', namespaced: true, required: false },
  { kind: 'ReferenceGrant', version: 'v1beta1', plural: 'referencegrants', namespaced: true, required: false },
];
