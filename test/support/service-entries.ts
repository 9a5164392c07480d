/**
 * ServiceEntry config objects made in code and validated as a document is (parseConfigObject), for
 * tests that need thousands of endpoints without the YAML reader's time for them (docs/adr/0204).
 */
import { parseConfigObject } from '../../src/config/parse.js';
import type { ConfigObject } from '../../src/config/types.js';

/** A STATIC, MESH_INTERNAL ServiceEntry `name` in namespace default for `host`, port 80, one endpoint per address. */
export function serviceEntryObject(name: string, host: string, addresses: ReadonlyArray<string>): ConfigObject {
  const r = parseConfigObject(
    {
      apiVersion: 'networking.mesh.io/v1',
      kind: 'ServiceEntry',
      metadata: { name, namespace: 'default' },
      spec: { hosts: [host], location: 'MESH_INTERNAL', resolution: 'STATIC', ports: [{ number: 80, name: 'http', protocol: 'HTTP' }], endpoints: addresses.map((address) => ({ address })) },
    },
    `${name}.yaml#0`,
    'default',
  );
  if ('issues' in r) throw new Error(JSON.stringify(r.issues));
  return r;
}

/**
 * The YAML of a STATIC, MESH_INTERNAL ServiceEntry `<name>.default.svc.cluster.local` without VIPs:
 * one endpoint per address (none: it selects the workloads labelled `app: <name>`), and `ports` HTTP
 * ports numbered from `port` (`http`, or `http-0`, `http-1`, … when there are several).
 */
export function serviceEntryYaml(name: string, addresses: ReadonlyArray<string>, port = 8080, ports = 1): string {
  const portList = Array.from({ length: ports }, (_, i) => `{ number: ${port + i}, name: ${ports === 1 ? 'http' : `http-${i}`}, protocol: HTTP }`);
  const endpoints = addresses.length > 0 ? `endpoints: [${addresses.map((a) => `{ address: ${a} }`).join(', ')}]` : `workloadSelector: { labels: { app: ${name} } }`;
  return `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: ${name}, namespace: default }
spec:
  hosts: [${name}.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [${portList.join(', ')}]
  ${endpoints}
---
`;
}
