/**
 * Shared fixtures of the proxyless gRPC security tests: the `echo-grpc` ServiceEntry (a mesh-internal
 * gRPC service with its SPIFFE identity) and proxyless node identities.
 */
import { parseProxy, type Proxy } from '../../src/model/proxy.js';

export interface EchoGrpcEntry {
  readonly host: string;
  readonly port: number;
  readonly namespace?: string;
  /** The SAN of the service's workloads. */
  readonly identity: string;
  /** The `endpoints` list, as YAML flow. */
  readonly endpoints: string;
}

/** The ServiceEntry `echo-grpc`: MESH_INTERNAL, STATIC, one GRPC port. */
export function echoGrpcServiceEntry(e: EchoGrpcEntry): string {
  return `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: echo-grpc, namespace: ${e.namespace ?? 'default'} }
spec:
  hosts: [${e.host}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: ${e.port}, name: grpc, protocol: GRPC }]
  subjectAltNames: ["${e.identity}"]
  endpoints: [${e.endpoints}]
`;
}

/** A proxyless gRPC node (GENERATOR grpc) of a pod with these labels. */
export function grpcProxy(pod: string, ip: string, labels: Record<string, string>, ns = 'default'): Proxy {
  return parseProxy(`sidecar~${ip}~${pod}.${ns}~${ns}.svc.cluster.local`, { GENERATOR: 'grpc', NAMESPACE: ns, LABELS: labels });
}
