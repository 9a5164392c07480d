/**
 * SDS on the ADS stream (docs/adr/0105): the Kubernetes Secrets that gateway credentials name
 * (`kubernetes://<name>`, `kubernetes://<name>-cacert`, or with `<namespace>/` before the name),
 * served only to gateways (router proxies) of the Secret's namespace, and to sidecars of that namespace
 * whose workload-selecting DestinationRules name it (docs/adr/0152). A name that does not resolve
 * to a usable Secret is left out of the answer: Envoy keeps waiting for it, and the listener that
 * names it is built without that server (gateway.ts). Who may ask for what is decided before the
 * names reach a generator (src/security/credential-access.ts); this generator checks the namespace
 * again and answers nothing it should not.
 */
import { Secret } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import type { Credential } from '../../model/credentials.js';
import { CACERT_SUFFIX } from '../../model/credentials.js';
import type { EncodedResource, ResourceCache } from '../cache.js';
import { encode, msg } from '../envoy/pack.js';
import { parseCredentialName } from '../envoy/security/names.js';
import { TypeUrl } from '../types.js';
import type { GenerateInput } from './types.js';

/** The CA credential of `name`: the Secret `<name>-cacert` when it has CA certificates, else `<name>`'s own. */
export function caCredential(push: PushContext, namespace: string, name: string): Credential | undefined {
  const split = push.credential(namespace, `${name}${CACERT_SUFFIX}`);
  if (split.state === 'present' && split.credential.caCertificates) return split.credential;
  const own = push.credential(namespace, name);
  if (own.state === 'present' && own.credential.caCertificates) return own.credential;
  return undefined;
}

const bytes = (pem: string): Buffer => Buffer.from(pem, 'utf8');

function secretResource(cache: ResourceCache, sdsName: string, cred: Credential, ca: boolean): EncodedResource {
  return cache.getOrBuild('sds', `sds|${sdsName}|${cred.key}@${cred.version}|${ca ? 'ca' : 'cert'}`, () => {
    const secret = ca
      ? msg(Secret, { name: sdsName, validationContext: { trustedCa: { inlineBytes: bytes(cred.caCertificates!) }, ...(cred.crl ? { crl: { inlineBytes: bytes(cred.crl) } } : {}) } })
      : msg(Secret, { name: sdsName, tlsCertificate: { certificateChain: { inlineBytes: bytes(cred.certificateChain!) }, privateKey: { inlineBytes: bytes(cred.privateKey!) } } });
    return { name: sdsName, typeUrl: TypeUrl.Secret, bytes: encode(Secret, secret) };
  });
}

/** The Secret resource for one requested SDS name, if the proxy may have it and it exists. */
function secretFor(proxy: Proxy, push: PushContext, cache: ResourceCache, sdsName: string): EncodedResource | undefined {
  const ref = parseCredentialName(sdsName);
  if (!ref) return undefined;
  const namespace = ref.namespace ?? proxy.namespace;
  if (namespace !== proxy.namespace) return undefined;
  if (ref.ca) {
    const cred = caCredential(push, namespace, ref.name);
    return cred ? secretResource(cache, sdsName, cred, true) : undefined;
  }
  const found = push.credential(namespace, ref.name);
  if (found.state !== 'present' || !found.credential.certificateChain) return undefined;
  return secretResource(cache, sdsName, found.credential, false);
}

/**
 * SDS for every proxy kind: gateways get the Secrets of their namespace they ask for; sidecars only
 * those their workload-selecting DestinationRules name (docs/adr/0152); gRPC clients none.
 */
export function secrets({ proxy, push, cache, names }: GenerateInput): EncodedResource[] {
  if (!names || (proxy.type !== 'router' && proxy.type !== 'sidecar')) return [];
  const allowed = proxy.type === 'sidecar' ? new Set(push.credentialReferences(proxy)) : undefined;
  if (allowed?.size === 0) return [];
  const out: EncodedResource[] = [];
  for (const n of [...names].sort()) {
    const ref = parseCredentialName(n);
    if (allowed && (!ref || !allowed.has(`${ref.namespace ?? proxy.namespace}/${ref.name}`))) continue;
    const r = secretFor(proxy, push, cache, n);
    if (r) out.push(r);
  }
  return out;
}
