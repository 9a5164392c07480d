/**
 * The plug-in CA: an operator's own signing certificate and key, given as the `cacerts` Secret of
 * the mesh namespace or as the same four files in ROOT_CA_DIR. When present it wins over the
 * self-signed root; its intermediate chain is served whole. An incomplete or inconsistent plug-in
 * CA is an error naming what is wrong, never a silent fall-back to the self-signed root.
 */
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { KubeClient } from '../kube/client.js';
import { CA_FILES, CaMaterialError, readCaFiles, type CaFiles, type SigningMaterial } from './material.js';
import { PLUGIN_SECRET, caFilesFromSecret, missingEntries, type SecretObject } from './secret-store.js';

export interface PluginCaOptions {
  /** The cluster, when the daemon has one. */
  readonly client?: KubeClient;
  readonly namespace: string;
  /** ROOT_CA_DIR. */
  readonly rootCaDir: string;
  /** USE_REMOTE_CERTS: the CA must come from the cluster's `cacerts` Secret. */
  readonly requireSecret: boolean;
}

export interface PluginCa {
  readonly material: SigningMaterial;
  /** "Secret mesh-system/cacerts" or "ROOT_CA_DIR /etc/cacerts". */
  readonly source: string;
}

/** The plug-in CA, or undefined when none is configured. Throws `CaMaterialError`. */
export async function loadPluginCa(o: PluginCaOptions): Promise<PluginCa | undefined> {
  if (o.client) {
    const secret = await o.client.find<SecretObject>({ apiVersion: 'v1', kind: 'Secret', namespace: o.namespace, name: PLUGIN_SECRET });
    const source = `Secret ${o.namespace}/${PLUGIN_SECRET}`;
    if (secret) {
      const files = caFilesFromSecret(secret);
      if (!files) throw new CaMaterialError(`${source}: lacks ${missingEntries(secret).join(', ')} (a plug-in CA needs ${CA_FILES.join(', ')})`);
      return { material: readCaFiles(files, source), source };
    }
    if (o.requireSecret) throw new CaMaterialError(`USE_REMOTE_CERTS=true: ${source} does not exist in the cluster`);
  } else if (o.requireSecret) {
    throw new CaMaterialError('USE_REMOTE_CERTS=true needs a cluster to read the cacerts Secret from (--registries Cluster)');
  }
  const dir = resolve(o.rootCaDir);
  const source = `ROOT_CA_DIR ${dir}`;
  const present: Partial<Record<(typeof CA_FILES)[number], string>> = {};
  for (const name of CA_FILES) {
    try {
      const p = join(dir, name);
      if ((await stat(p)).isFile()) present[name] = await readFile(p, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
    }
  }
  const found = CA_FILES.filter((n) => present[n] !== undefined);
  if (found.length === 0) return undefined;
  if (found.length < CA_FILES.length) {
    throw new CaMaterialError(`${source}: has ${found.join(', ')} but lacks ${CA_FILES.filter((n) => present[n] === undefined).join(', ')} (a plug-in CA needs all four)`);
  }
  return { material: readCaFiles(present as CaFiles, source), source };
}
