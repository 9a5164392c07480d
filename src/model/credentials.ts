/**
 * Gateway credentials (`credentialName`) as the model sees them (docs/adr/0105): the Kubernetes
 * Secrets that Gateways and DestinationRules name, read by a source that watches only the Secrets
 * referenced by the gateways connected to this daemon, kept in an immutable set per snapshot.
 *
 * A Secret holds a certificate chain and key (`tls.crt`/`tls.key`, or the generic `cert`/`key`),
 * CA certificates (`ca.crt`, or `cacert`), or both. The CA of credential `<name>` is the Secret
 * `<name>-cacert` when it exists, else the CA part of `<name>` itself.
 */
/** The parts of one Secret a credential is made of (PEM text). */
export interface Credential {
  /** `namespace/name` of the Secret. */
  readonly key: string;
  /** The Secret's resourceVersion (or any string that changes with its content). */
  readonly version: string;
  readonly certificateChain?: string;
  readonly privateKey?: string;
  readonly caCertificates?: string;
  /** `ca.crl`, when the Secret has one. */
  readonly crl?: string;
}

/**
 * What the model knows of one Secret: `pending` while its watch has not loaded it yet (a proxy is
 * given the configuration that names it, and waits for it), `missing` when it does not exist or holds
 * no usable credential, else the credential.
 */
export type CredentialLookup = { readonly state: 'pending' } | { readonly state: 'missing'; readonly reason: string } | { readonly state: 'present'; readonly credential: Credential };

const PENDING: CredentialLookup = Object.freeze({ state: 'pending' });

/** An immutable set of credentials by `namespace/name`, with the names still loading. */
export class CredentialSet {
  static readonly EMPTY = new CredentialSet(new Map(), new Set());

  constructor(
    readonly byKey: ReadonlyMap<string, CredentialLookup>,
    /** Keys whose Secrets are watched but not loaded yet. */
    readonly pending: ReadonlySet<string>,
    /**
     * What a key the set does not hold is: `missing` without a source that could load it, `pending`
     * with one (a gateway that just connected names Secrets whose watches start with it: its first
     * listener must not lose the servers they configure).
     */
    readonly unknown: 'missing' | 'pending' = 'missing',
  ) {}

  /** The Secret `namespace/name`: present, missing, or pending (watched, not loaded yet). */
  get(namespace: string, name: string): CredentialLookup {
    const key = `${namespace}/${name}`;
    if (this.pending.has(key)) return PENDING;
    return this.byKey.get(key) ?? (this.unknown === 'pending' ? PENDING : { state: 'missing', reason: 'no such Secret' });
  }
}

/** Where the model gets credentials from (the Kubernetes Secret source, or nothing). */
export interface CredentialSource {
  current(): CredentialSet;
  /** Called after the set changed; returns an unsubscribe function. */
  onChange(handler: () => void): () => void;
}

const text = (data: Readonly<Record<string, string>> | undefined, ...keys: string[]): string | undefined => {
  for (const k of keys) {
    const v = data?.[k];
    if (v !== undefined && v !== '') return Buffer.from(v, 'base64').toString('utf8');
  }
  return undefined;
};

/**
 * A Secret (its base64 `data`) as a credential: the TLS form (`tls.crt`, `tls.key`, `ca.crt`,
 * `ca.crl`) or the generic form (`cert`, `key`, `cacert`). A certificate without its key (or the
 * other way round) is no credential; a Secret that holds neither a pair nor CA certificates is
 * missing, with the reason (key names only, never content).
 */
export function credentialFromSecret(namespace: string, name: string, version: string, data: Readonly<Record<string, string>> | undefined): CredentialLookup {
  const certificateChain = text(data, 'tls.crt', 'cert');
  const privateKey = text(data, 'tls.key', 'key');
  const caCertificates = text(data, 'ca.crt', 'cacert');
  const crl = text(data, 'ca.crl');
  if ((certificateChain === undefined) !== (privateKey === undefined)) {
    return { state: 'missing', reason: certificateChain ? 'has a certificate (tls.crt or cert) but no key (tls.key or key)' : 'has a key (tls.key or key) but no certificate (tls.crt or cert)' };
  }
  if (certificateChain === undefined && caCertificates === undefined) {
    return { state: 'missing', reason: 'has none of tls.crt/tls.key, cert/key, ca.crt or cacert' };
  }
  return { state: 'present', credential: { key: `${namespace}/${name}`, version, certificateChain, privateKey, caCertificates, crl } };
}

/** Suffix of a credential's CA companion (`<name>-cacert`), in Secret and SDS names alike. */
export const CACERT_SUFFIX = '-cacert';

/** Prefix of the SDS names of Kubernetes Secret credentials (`credentialName`), asked for on the ADS stream. */
const CREDENTIAL_PREFIX = 'kubernetes://';

/** What an SDS name of a credential asks for: the Secret (namespace when written), and whether its CA part. */
export interface CredentialRef {
  /** The namespace written in the name (`kubernetes://<ns>/<name>`); absent: the proxy's own. */
  readonly namespace?: string;
  /** The Secret's name, without the `-cacert` suffix when `ca`. */
  readonly name: string;
  readonly ca: boolean;
}

/** Reads `kubernetes://[<ns>/]<name>[-cacert]`; undefined for names of another form. */
export function parseCredentialName(sdsName: string): CredentialRef | undefined {
  if (!sdsName.startsWith(CREDENTIAL_PREFIX)) return undefined;
  const rest = sdsName.slice(CREDENTIAL_PREFIX.length);
  const parts = rest.split('/');
  if (parts.length > 2 || parts.some((p) => p === '')) return undefined;
  const [namespace, full] = parts.length === 2 ? [parts[0], parts[1]] : [undefined, parts[0]];
  const ca = full.endsWith(CACERT_SUFFIX) && full.length > CACERT_SUFFIX.length;
  return { namespace, name: ca ? full.slice(0, -CACERT_SUFFIX.length) : full, ca };
}
