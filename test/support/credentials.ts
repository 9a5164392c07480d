/** Credentials as the Kubernetes source would hold them (docs/adr/0105), changeable by a test. */
import { CredentialSet, credentialFromSecret, type CredentialLookup, type CredentialSource } from '../../src/model/credentials.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

export class TestCredentials implements CredentialSource {
  private set = CredentialSet.EMPTY;
  private readonly handlers = new Set<() => void>();
  private readonly entries = new Map<string, CredentialLookup>();
  private readonly pending = new Set<string>();
  current(): CredentialSet {
    return this.set;
  }
  onChange(h: () => void): () => void {
    this.handlers.add(h);
    return () => this.handlers.delete(h);
  }
  /** Sets (or with `undefined` removes) the Secret `ns/name`; values are given in clear and stored base64 as Kubernetes does. */
  secret(ns: string, name: string, data: Record<string, string> | undefined, version = '1'): void {
    this.pending.delete(`${ns}/${name}`);
    if (data === undefined) this.entries.delete(`${ns}/${name}`);
    else this.entries.set(`${ns}/${name}`, credentialFromSecret(ns, name, version, Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)]))));
    this.publish();
  }
  loading(ns: string, name: string): void {
    this.pending.add(`${ns}/${name}`);
    this.publish();
  }
  private publish(): void {
    this.set = new CredentialSet(new Map(this.entries), new Set(this.pending));
    for (const h of this.handlers) h();
  }
}
