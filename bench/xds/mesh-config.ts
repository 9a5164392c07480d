/**
 * The synthetic mesh as config files: N ServiceEntries (MESH_INTERNAL, STATIC, one HTTP port, 2–3
 * endpoints labelled v1/v2, a virtual IP with `--vips`), a DestinationRule with subsets v1/v2 per service, and a VirtualService
 * splitting 90/10 between the subsets for every tenth service. Objects are written as multi-document
 * YAML files of at most OBJECTS_PER_FILE objects, one kind per file.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  HTTP_PORT,
  clientAddress,
  endpointAddress,
  endpointCount,
  endpointVersion,
  hasVirtualService,
  serviceHost,
  serviceName,
  serviceNamespace,
  serviceVip,
} from './naming.js';

export const OBJECTS_PER_FILE = 500;
const API_VERSION = 'networking.mesh.io/v1';

type Kind = 'service-entries' | 'destination-rules' | 'virtual-services' | 'policies' | 'peer-authentications' | 'client-services';

/** Client apps (`client-<c % 100>`): with policies, each is a service whose endpoints are its clients, so they have inbound ports. */
const CLIENT_APPS = 100;
const CLIENT_TCP_PORT = 9000;

/** A key set for the RequestAuthentications (a public EC key; nothing is ever verified against it here). */
const JWKS = '{"keys":[{"kty":"EC","crv":"P-256","x":"MezAum_tZTI8TbpDWrbopviqRjwWJ3uGM0Wlvbm68RQ","y":"RZJCdANcuGi24hg9HJeFjQ7iJQ0eJFYFHhlrKVQiBy8"}]}';

function header(kind: string, i: number): string {
  return `apiVersion: ${API_VERSION}\nkind: ${kind}\nmetadata:\n  name: ${serviceName(i)}\n  namespace: ${serviceNamespace(i)}\n`;
}

export class MeshConfig {
  /** VirtualService weights [v1, v2] that differ from 90/10. */
  private readonly weights = new Map<number, readonly [number, number]>();
  /** Endpoint addresses that differ from the generated ones, by `service/endpoint`. */
  private readonly addresses = new Map<string, string>();
  private tmpCounter = 0;

  /** @param vips give every ServiceEntry a virtual IP (as Kubernetes ClusterIP services have). */
  constructor(
    readonly dir: string,
    readonly services: number,
    readonly vips = false,
    /** AuthorizationPolicies in the clients' namespaces (ns-<p % 10>, selecting app client-<p % 100>), plus one RequestAuthentication per namespace. */
    readonly policies = 0,
    /** Clients of the run: with policies, their apps become services (inbound ports for the policies to apply to). */
    readonly clients = 0,
  ) {}

  /**
   * PeerAuthentication p (as many as AuthorizationPolicies): p = 0 mesh-wide PERMISSIVE in the root
   * namespace; 1..10 namespace-wide, STRICT for odd namespaces, UNSET (inherit) for even; past that
   * workload-level for app client-<p % 100> with a port-level override of the HTTP port
   * (PERMISSIVE or DISABLE) and the TCP port STRICT.
   */
  private peerAuthentication(p: number): string {
    const head = (name: string, ns: string): string => `apiVersion: security.mesh.io/v1\nkind: PeerAuthentication\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n`;
    if (p === 0) return `${head('default', 'mesh-system')}  mtls:\n    mode: PERMISSIVE\n`;
    if (p <= 10) {
      const n = p - 1;
      return `${head('default', `ns-${n}`)}  mtls:\n    mode: ${n % 2 === 1 ? 'STRICT' : 'UNSET'}\n`;
    }
    const app = p % CLIENT_APPS;
    return (
      `${head(`pa-${p}`, `ns-${app % 10}`)}  selector:\n    matchLabels:\n      app: client-${app}\n  mtls:\n    mode: ${p % 3 === 0 ? 'STRICT' : 'PERMISSIVE'}\n` +
      `  portLevelMtls:\n    ${HTTP_PORT}:\n      mode: ${p % 2 === 0 ? 'PERMISSIVE' : 'DISABLE'}\n    ${CLIENT_TCP_PORT}:\n      mode: STRICT\n`
    );
  }

  /** The service of client app k: an HTTP and a TCP port, its clients' addresses as endpoints. */
  private clientService(k: number): string {
    const ns = `ns-${k % 10}`;
    const eps: string[] = [];
    for (let c = k; c < this.clients; c += CLIENT_APPS) eps.push(`    - address: ${clientAddress(c)}\n`);
    return (
      `apiVersion: ${API_VERSION}\nkind: ServiceEntry\nmetadata:\n  name: client-${k}\n  namespace: ${ns}\n` +
      `spec:\n  hosts:\n    - client-${k}.${ns}.svc.cluster.local\n  location: MESH_INTERNAL\n  resolution: STATIC\n` +
      `  ports:\n    - number: ${HTTP_PORT}\n      name: http\n      protocol: HTTP\n    - number: ${CLIENT_TCP_PORT}\n      name: tcp\n      protocol: TCP\n` +
      `  endpoints:\n${eps.join('')}`
    );
  }

  /** Policy p: an AuthorizationPolicy; past `policies`, RequestAuthentication p - policies (one per namespace). */
  private policy(p: number): string {
    if (p >= this.policies) {
      const ns = `ns-${p - this.policies}`;
      return `apiVersion: security.mesh.io/v1\nkind: RequestAuthentication\nmetadata:\n  name: jwt\n  namespace: ${ns}\nspec:\n  jwtRules:\n    - issuer: https://issuer.${ns}.example\n      jwks: '${JWKS}'\n`;
    }
    const ns = `ns-${p % 10}`;
    const head = `apiVersion: security.mesh.io/v1\nkind: AuthorizationPolicy\nmetadata:\n  name: policy-${p}\n  namespace: ${ns}\nspec:\n  selector:\n    matchLabels:\n      app: client-${p % 100}\n`;
    return p % 2 === 0
      ? `${head}  action: ALLOW\n  rules:\n    - from:\n        - source:\n            principals: [cluster.local/ns/${ns}/sa/client-${p}]\n            requestPrincipals: [https://issuer.${ns}.example/user-${p}]\n      to:\n        - operation:\n            methods: [GET]\n            paths: [/api/${p}/*]\n`
      : `${head}  action: DENY\n  rules:\n    - when:\n        - key: request.auth.claims[groups]\n          values: [blocked-${p}]\n        - key: source.ip\n          values: [10.${p % 250}.0.0/16]\n`;
  }

  private serviceEntry(i: number): string {
    const eps: string[] = [];
    for (let j = 0; j < endpointCount(i); j++) {
      const addr = this.addresses.get(`${i}/${j}`) ?? endpointAddress(i, j);
      eps.push(`    - address: ${addr}\n      labels:\n        version: ${endpointVersion(j)}\n`);
    }
    return (
      header('ServiceEntry', i) +
      `spec:\n  hosts:\n    - ${serviceHost(i)}\n${this.vips ? `  addresses:\n    - ${serviceVip(i)}\n` : ''}  location: MESH_INTERNAL\n  resolution: STATIC\n` +
      `  ports:\n    - number: ${HTTP_PORT}\n      name: http\n      protocol: HTTP\n` +
      `  endpoints:\n${eps.join('')}`
    );
  }

  private destinationRule(i: number): string {
    return (
      header('DestinationRule', i) +
      `spec:\n  host: ${serviceHost(i)}\n  subsets:\n` +
      `    - name: v1\n      labels:\n        version: v1\n` +
      `    - name: v2\n      labels:\n        version: v2\n`
    );
  }

  private virtualService(i: number): string {
    const [w1, w2] = this.weights.get(i) ?? [90, 10];
    const host = serviceHost(i);
    return (
      header('VirtualService', i) +
      `spec:\n  hosts:\n    - ${host}\n  http:\n    - name: split\n      route:\n` +
      `        - destination:\n            host: ${host}\n            subset: v1\n          weight: ${w1}\n` +
      `        - destination:\n            host: ${host}\n            subset: v2\n          weight: ${w2}\n`
    );
  }

  /** Indices of the objects of one kind, in file order. */
  private indices(kind: Kind): number[] {
    const out: number[] = [];
    if (kind === 'policies') {
      for (let p = 0; p < (this.policies > 0 ? this.policies + 10 : 0); p++) out.push(p);
      return out;
    }
    if (kind === 'peer-authentications') {
      for (let p = 0; p < this.policies; p++) out.push(p);
      return out;
    }
    if (kind === 'client-services') {
      for (let k = 0; k < (this.policies > 0 ? Math.min(CLIENT_APPS, this.clients) : 0); k++) out.push(k);
      return out;
    }
    for (let i = 0; i < this.services; i++) if (kind !== 'virtual-services' || hasVirtualService(i)) out.push(i);
    return out;
  }

  private fileName(kind: Kind, chunk: number): string {
    return `${kind}-${String(chunk).padStart(3, '0')}.yaml`;
  }

  private render(kind: Kind, chunk: number): string {
    const all = this.indices(kind).slice(chunk * OBJECTS_PER_FILE, (chunk + 1) * OBJECTS_PER_FILE);
    const one =
      kind === 'service-entries'
        ? (i: number) => this.serviceEntry(i)
        : kind === 'destination-rules'
          ? (i: number) => this.destinationRule(i)
          : kind === 'policies'
            ? (i: number) => this.policy(i)
            : kind === 'peer-authentications'
              ? (i: number) => this.peerAuthentication(i)
              : kind === 'client-services'
                ? (i: number) => this.clientService(i)
                : (i: number) => this.virtualService(i);
    return all.map(one).join('---\n');
  }

  private chunkOf(kind: Kind, i: number): number {
    return Math.floor(this.indices(kind).indexOf(i) / OBJECTS_PER_FILE);
  }

  /** Writes every file; returns their names. */
  async writeAll(): Promise<string[]> {
    await mkdir(this.dir, { recursive: true });
    const names: string[] = [];
    for (const kind of ['service-entries', 'destination-rules', 'virtual-services', 'policies', 'peer-authentications', 'client-services'] as const) {
      const n = Math.ceil(this.indices(kind).length / OBJECTS_PER_FILE);
      for (let c = 0; c < n; c++) {
        const name = this.fileName(kind, c);
        await writeFile(join(this.dir, name), this.render(kind, c));
        names.push(name);
      }
    }
    return names;
  }

  /** Renders the changed file in memory; `commit` writes it atomically (hidden temporary + rename). */
  private prepare(kind: Kind, i: number): { file: string; commit: () => Promise<void> } {
    const chunk = this.chunkOf(kind, i);
    const file = this.fileName(kind, chunk);
    const content = this.render(kind, chunk);
    const target = join(this.dir, file);
    return {
      file,
      commit: async () => {
        const tmp = join(this.dir, `.${file}.${process.pid}.${++this.tmpCounter}.tmp`);
        await writeFile(tmp, content);
        await rename(tmp, target);
      },
    };
  }

  /** Changes the weights of service i's VirtualService; the file is written by `commit`. */
  editWeights(i: number, w1: number, w2: number): { file: string; commit: () => Promise<void> } {
    if (!hasVirtualService(i) || i >= this.services) throw new Error(`service ${i} has no VirtualService`);
    this.weights.set(i, [w1, w2]);
    return this.prepare('virtual-services', i);
  }

  /** Moves endpoint j of service i to a new address; the file is written by `commit`. */
  editEndpoint(i: number, j: number, address: string): { file: string; commit: () => Promise<void> } {
    if (i >= this.services || j >= endpointCount(i)) throw new Error(`service ${i} has no endpoint ${j}`);
    this.addresses.set(`${i}/${j}`, address);
    return this.prepare('service-entries', i);
  }
}
