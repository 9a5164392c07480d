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
