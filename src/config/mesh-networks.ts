/**
 * Mesh networks (`--networksConfig` file, or the `meshNetworks` key of the mesh ConfigMap): which
 * endpoints belong to which network, and the gateways through which a network is reached from
 * another. YAML of the shape
 *
 *   networks:
 *     <network name>:
 *       endpoints: [ { fromCidr: 10.1.0.0/16 } | { fromRegistry: <cluster id> } ]
 *       gateways:  [ { registryServiceName: <host> | address: <ip or name>, port: 15443, locality?: r/z } ]
 *
 * An empty or absent document means no networks. Invalid input is refused with a ConfigError whose
 * issues name the field and the reason.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { parseYamlDocument } from './yaml-document.js';

const cidr = z.string().refine((v) => {
  const [ip, len, extra] = v.split('/');
  if (extra !== undefined || len === undefined || !/^\d+$/.test(len)) return false;
  const family = isIP(ip ?? '');
  return family !== 0 && Number(len) <= (family === 4 ? 32 : 128);
}, 'must be a CIDR such as 10.0.0.0/16');

const NetworkEndpointsSchema = z
  .strictObject({ fromCidr: cidr.optional(), fromRegistry: z.string().min(1).optional() })
  .refine((e) => (e.fromCidr === undefined) !== (e.fromRegistry === undefined), 'exactly one of fromCidr and fromRegistry must be set');

const GatewaySchema = z
  .strictObject({
    registryServiceName: z.string().min(1).optional(),
    address: z.string().min(1).optional(),
    port: z.number().int().min(1).max(65535),
    locality: z.string().optional(),
  })
  .refine((g) => (g.registryServiceName === undefined) !== (g.address === undefined), 'exactly one of registryServiceName and address must be set');

const NetworkSchema = z.strictObject({
  endpoints: z.array(NetworkEndpointsSchema).optional(),
  gateways: z.array(GatewaySchema).optional(),
});

export const MeshNetworksSchema = z.strictObject({
  networks: z.record(z.string().min(1), NetworkSchema).optional(),
});

export type MeshNetworks = z.infer<typeof MeshNetworksSchema>;
export type MeshNetwork = z.infer<typeof NetworkSchema>;

export const EMPTY_MESH_NETWORKS: MeshNetworks = Object.freeze({ networks: {} });

/** Parses mesh networks YAML; `origin` prefixes every issue (file path, or ConfigMap and key). */
export function parseMeshNetworks(text: string, origin: string): MeshNetworks {
  const parsed = parseYamlDocument(text, origin, MeshNetworksSchema);
  return Object.freeze({ networks: parsed.networks ?? {} });
}
