/**
 * Gateway credentials from Kubernetes Secrets (docs/adr/0105). The daemon reads only the Secrets
 * that connected gateways' configuration names: one watch per Secret (`metadata.name` field
 * selector in the gateway's namespace), started when a name becomes referenced and stopped when no
 * gateway references it any more. What the watches hold becomes an immutable CredentialSet; every
 * change of it is told to the model, which rebuilds the snapshot (the Secret is a dependency key of
 * the values that read it).
 *
 * Only the keys a credential is made of are kept (tls.crt, tls.key, ca.crt, ca.crl, cert, key,
 * cacert); nothing of a Secret's content is ever logged.
 */
import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.js';
import { Informer, resourceRef, type InformerPhase } from '../../kube/informer.js';
import type { KubeObject } from '../../kube/types.js';
import { CredentialSet, credentialFromSecret, type CredentialLookup, type CredentialSource } from '../../model/credentials.js';

interface SecretObject extends KubeObject {
  readonly type?: string;
  readonly data?: Readonly<Record<string, string>>;
}

const SECRETS = resourceRef('v1', 'secrets', { namespaced: true, kind: 'Secret' });
const CREDENTIAL_KEYS = ['tls.crt', 'tls.key', 'ca.crt', 'ca.crl', 'cert', 'key', 'cacert'];
/** Most Secrets watched at once: names come from configuration, this bounds a runaway one. */
export const MAX_WATCHED_CREDENTIALS = 2048;

/** Keeps the metadata a credential needs and its credential keys, nothing else. */
function slimSecret(s: SecretObject): SecretObject {
  const data: Record<string, string> = {};
  for (const k of CREDENTIAL_KEYS) if (s.data?.[k] !== undefined) data[k] = s.data[k];
  const m = s.metadata;
  return { apiVersion: s.apiVersion, kind: s.kind, type: s.type, metadata: { name: m?.name, namespace: m?.namespace, uid: m?.uid, resourceVersion: m?.resourceVersion }, data };
}

export interface KubeCredentialOptions {
  readonly client: KubeClient;
  readonly log: Logger;
  /** disc_sds_certificate_errors_total: a Secret that could not be read, or that holds no usable credential. */
  readonly errors: { inc(): void };
  /** Tests shorten the informers' retry delays. */
  readonly backoffMs?: number;
}

interface Watched {
  readonly informer: Informer<SecretObject>;
  /** Set once the informer's first list failed and it has not synced since (RBAC, API errors). */
  failure?: string;
}

export class KubeCredentialSource implements CredentialSource {
  private readonly watched = new Map<string, Watched>();
  private readonly handlers = new Set<() => void>();
  private set: CredentialSet = new CredentialSet(new Map(), new Set(), 'pending');
  private stopped = false;

  constructor(private readonly opts: KubeCredentialOptions) {}

  current(): CredentialSet {
    return this.set;
  }

  onChange(handler: () => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** The Secrets (`namespace/name`) watched now (tests, debug). */
  watchedKeys(): string[] {
    return [...this.watched.keys()].sort();
  }

  /** Watch exactly these Secrets (`namespace/name`): new ones start loading, ones no longer named stop. */
  want(keys: Iterable<string>): void {
    if (this.stopped) return;
    const next = new Set<string>();
    for (const k of keys) {
      if (next.size >= MAX_WATCHED_CREDENTIALS) {
        this.opts.log.warn({ limit: MAX_WATCHED_CREDENTIALS }, `credentials: more than ${MAX_WATCHED_CREDENTIALS} Secrets named by gateways; the rest are not read`);
        break;
      }
      next.add(k);
    }
    let changed = false;
    for (const [k, w] of this.watched) {
      if (next.has(k)) continue;
      this.watched.delete(k);
      void w.informer.stop();
      changed = true;
    }
    for (const k of next) {
      if (this.watched.has(k)) continue;
      this.startWatch(k);
      changed = true;
    }
    if (changed) this.rebuild();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const all = [...this.watched.values()];
    this.watched.clear();
    await Promise.all(all.map((w) => w.informer.stop()));
  }

  private startWatch(key: string): void {
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const entry: Watched = {
      informer: new Informer<SecretObject>(this.opts.client, {
        resource: SECRETS,
        namespace,
        fieldSelector: `metadata.name=${name}`,
        transform: slimSecret,
        name: `secret ${key}`,
        ...(this.opts.backoffMs ? { backoff: { initialMs: this.opts.backoffMs, maxMs: this.opts.backoffMs * 4 } } : {}),
        onError: (err: Error, phase: InformerPhase) => {
          if (this.watched.get(key) !== entry) return;
          this.opts.errors.inc();
          this.opts.log.warn({ secret: key, phase, err: err.message }, `credentials: reading Secret ${key}: ${err.message} (retrying)`);
          if (!entry.informer.hasSynced() && entry.failure === undefined) {
            entry.failure = err.message;
            this.rebuild();
          }
        },
      }),
    };
    this.watched.set(key, entry);
    entry.informer.onEvent((e) => {
      if (this.watched.get(key) !== entry) return;
      if (e.type === 'delete') this.opts.log.warn({ secret: key }, `credentials: Secret ${key} was deleted; gateway servers that use it lose their TLS chain`);
      this.rebuild();
    });
    entry.informer.start();
    entry.informer
      .waitForSync()
      .then(() => {
        if (this.watched.get(key) !== entry) return;
        entry.failure = undefined;
        this.rebuild();
      })
      .catch(() => undefined);
  }

  private lookup(key: string, w: Watched): CredentialLookup {
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const s = w.informer.get(namespace, name);
    if (!s) return { state: 'missing', reason: 'no such Secret' };
    const found = credentialFromSecret(namespace, name, s.metadata?.resourceVersion ?? '', s.data);
    return found;
  }

  private rebuild(): void {
    const byKey = new Map<string, CredentialLookup>();
    const pending = new Set<string>();
    const before = this.set;
    for (const [k, w] of this.watched) {
      if (!w.informer.hasSynced()) {
        if (w.failure !== undefined) byKey.set(k, { state: 'missing', reason: `could not be read: ${w.failure}` });
        else pending.add(k);
        continue;
      }
      const next = this.lookup(k, w);
      // keep the previous object when nothing changed, so snapshots see the same credential
      const prev = before.byKey.get(k);
      if (prev && prev.state === 'present' && next.state === 'present' && prev.credential.version === next.credential.version) byKey.set(k, prev);
      else {
        if (next.state === 'missing' && next.reason !== 'no such Secret' && !(prev?.state === 'missing' && prev.reason === next.reason)) {
          this.opts.errors.inc();
          this.opts.log.warn({ secret: k, reason: next.reason }, `credentials: Secret ${k} ${next.reason}`);
        }
        byKey.set(k, next);
      }
    }
    if (sameSet(before, byKey, pending)) return;
    this.set = new CredentialSet(byKey, pending, 'pending');
    for (const h of this.handlers) h();
  }
}

function sameLookup(a: CredentialLookup | undefined, b: CredentialLookup): boolean {
  if (!a || a.state !== b.state) return false;
  if (a.state === 'present' && b.state === 'present') return a.credential === b.credential;
  if (a.state === 'missing' && b.state === 'missing') return a.reason === b.reason;
  return true;
}

function sameSet(before: CredentialSet, byKey: ReadonlyMap<string, CredentialLookup>, pending: ReadonlySet<string>): boolean {
  if (before.byKey.size !== byKey.size || before.pending.size !== pending.size) return false;
  for (const k of pending) if (!before.pending.has(k)) return false;
  for (const [k, v] of byKey) if (!sameLookup(before.byKey.get(k), v)) return false;
  return true;
}
