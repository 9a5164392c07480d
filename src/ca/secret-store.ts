/**
 * The self-signed CA's material in a Secret of the mesh namespace (`mesh-ca-secret`). Creation is
 * a plain create, so of two replicas starting together exactly one wins and the other reads the
 * winner's root back; replacement is a PUT carrying the resourceVersion it read, so a rotation
 * racing another replica's fails with a conflict and adopts what that replica stored.
 */
import type { KubeClient } from '../kube/client.js';
import { isAlreadyExists, isConflict } from '../kube/errors.js';
import type { KubeObject } from '../kube/types.js';
import { CA_FILES, type CaFiles } from './material.js';
import type { CaStore, StoredCa } from './store.js';

export const SELF_SIGNED_SECRET = 'mesh-ca-secret';
export const PLUGIN_SECRET = 'cacerts';
/** Type of the Secret the daemon writes. */
export const CA_SECRET_TYPE = 'mesh.io/ca-root';
const FIELD_MANAGER = 'mesh-discovery';

export interface SecretObject extends KubeObject {
  readonly type?: string;
  readonly data?: Readonly<Record<string, string>>;
}

/** The four entries of a Secret, or undefined when one is missing. */
export function caFilesFromSecret(secret: SecretObject): CaFiles | undefined {
  const out: Record<string, string> = {};
  for (const name of CA_FILES) {
    const b64 = secret.data?.[name];
    if (b64 === undefined) return undefined;
    out[name] = Buffer.from(b64, 'base64').toString('utf8');
  }
  return out as CaFiles;
}

/** Names the entries a Secret lacks (for the error of an incomplete `cacerts`). */
export function missingEntries(secret: SecretObject): string[] {
  return CA_FILES.filter((n) => secret.data?.[n] === undefined);
}

export class SecretCaStore implements CaStore {
  readonly durable = true;

  constructor(
    private readonly client: KubeClient,
    readonly namespace: string,
    readonly name = SELF_SIGNED_SECRET,
  ) {}

  get description(): string {
    return `Secret ${this.namespace}/${this.name}`;
  }

  async load(): Promise<StoredCa | undefined> {
    const secret = await this.client.find<SecretObject>({ apiVersion: 'v1', kind: 'Secret', namespace: this.namespace, name: this.name });
    return secret ? this.stored(secret) : undefined;
  }

  async createIfAbsent(files: CaFiles): Promise<StoredCa> {
    const existing = await this.load();
    if (existing) return existing;
    try {
      return this.stored(await this.client.create<SecretObject>(this.object(files), { fieldManager: FIELD_MANAGER }));
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const winner = await this.load();
    if (!winner) throw new Error(`${this.description}: created by another replica, then gone`);
    return winner;
  }

  async replace(previous: StoredCa, files: CaFiles): Promise<StoredCa> {
    try {
      return this.stored(await this.client.replace<SecretObject>({ ...this.object(files), metadata: { name: this.name, namespace: this.namespace, resourceVersion: previous.version } }, { fieldManager: FIELD_MANAGER }));
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
    return (await this.load()) ?? previous;
  }

  private object(files: CaFiles): SecretObject {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: this.name, namespace: this.namespace },
      type: CA_SECRET_TYPE,
      data: Object.fromEntries(CA_FILES.map((n) => [n, Buffer.from(files[n], 'utf8').toString('base64')])),
    };
  }

  private stored(secret: SecretObject): StoredCa {
    const files = caFilesFromSecret(secret);
    if (!files) throw new Error(`${this.description}: lacks ${missingEntries(secret).join(', ')}`);
    return { files, version: secret.metadata?.resourceVersion ?? '' };
  }
}
