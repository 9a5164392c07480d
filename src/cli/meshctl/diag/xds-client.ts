/**
 * meshctl's side of the xDS debug channel (docs/adr/0060): one ADS stream per meshd replica, one
 * `mesh.io/debug/<view>[?query]` request on it, the view's JSON back. The connection follows the
 * XG flags of the spec (part 1, "Authentication"):
 *
 *   --xds-address host:port   that daemon alone; else every meshd pod of the mesh namespace
 *                             (`--xds-label`, default `app=meshd`, and `mesh.io/rev=<-r>`) at its
 *                             pod IP and `--xds-port` (15012), read through the API server
 *   --plaintext               plain HTTP/2 (the daemon's 15010); else TLS:
 *   --cert-dir DIR            client certificate (cert-chain.pem, key.pem) and roots (root-cert.pem)
 *                             of the mesh: certificate mode, no API server needed
 *   (token mode)              otherwise a short-lived token of the mesh namespace's `default` service
 *                             account (TokenRequest, audience mesh-ca), roots from the ConfigMap
 *                             mesh-ca-root-cert of the mesh namespace
 *   --insecure                accept any server certificate
 *   --authority NAME          the name the server certificate must carry (default meshd.<ns>.svc)
 *   --timeout                 bound of each exchange (30s)
 *
 * Every failure is a CliError naming the daemon and the reason (unreachable, refused, timeout).
 */
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { DiscoveryRequest, DiscoveryResponse } from '../../../gen/envoy/service/discovery/v3/discovery.js';
import { StringValue } from '../../../gen/google/protobuf/wrappers.js';
import path from 'node:path';
import type { KubeClient } from '../../../kube/client.js';
import { parseSpiffeId } from '../../../security/spiffe.js';
import { CliError } from '../../runner.js';
import type { GlobalOptions } from '../global-flags.js';

export const DEBUG_TYPE_PREFIX = 'mesh.io/debug/';
/**
 * meshctl joins answers sent in parts and says so in its node metadata: every message of such an
 * answer but the last has this version and a JSON array of some of the items (the daemon's
 * DEBUG_PARTS_METADATA and DEBUG_PART_VERSION, src/xds/ads-server.ts; docs/adr/0185).
 */
const PARTS_METADATA = 'DEBUG_PARTS';
const PART_VERSION = 'part';
const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const MAX_MESSAGE = 256 * 1024 * 1024;
const ROOT_CONFIGMAP = 'mesh-ca-root-cert';
const TOKEN_AUDIENCE = 'mesh-ca';

export interface XdsConnectFlags {
  readonly xdsAddress: string;
  readonly xdsPort: number;
  readonly xdsLabel: string;
  readonly plaintext: boolean;
  readonly insecure: boolean;
  readonly certDir: string;
  readonly authority: string;
  readonly revision: string;
  readonly timeoutMs: number;
  readonly meshNamespace: string;
}

/** One daemon to ask: where, and its name in output. */
export interface XdsTarget {
  readonly name: string;
  readonly address: string;
}

export interface DebugResult<T = unknown> {
  readonly target: XdsTarget;
  readonly body?: T;
  /** Why this daemon gave no answer. */
  readonly error?: string;
}

/** The XG flag values of a command (flags > variables > MESHCONFIG file, as global-flags.ts resolves them). */
export function xdsFlags(globals: GlobalOptions, opts: { readonly xdsLabel?: string; readonly revision?: string; readonly timeout?: string }, timeoutMs: number): XdsConnectFlags {
  return {
    xdsAddress: globals.xdsAddress,
    xdsPort: globals.xdsPort,
    xdsLabel: opts.xdsLabel || 'app=meshd',
    plaintext: globals.plaintext,
    insecure: globals.insecure,
    certDir: globals.certDir,
    authority: globals.authority,
    revision: opts.revision ?? '',
    timeoutMs,
    meshNamespace: globals.meshNamespace,
  };
}

interface Pod {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly status?: { readonly podIP?: string; readonly phase?: string };
}

/** The daemons to ask: `--xds-address`, or the running meshd pods. */
export async function resolveTargets(flags: XdsConnectFlags, client: (() => Promise<KubeClient>) | undefined): Promise<XdsTarget[]> {
  if (flags.xdsAddress) return [{ name: flags.xdsAddress, address: withPort(flags.xdsAddress, flags.xdsPort) }];
  if (!client) throw new CliError('no --xds-address given and no cluster to find meshd in');
  const kube = await client();
  const selector = flags.revision ? `${flags.xdsLabel},mesh.io/rev=${flags.revision}` : flags.xdsLabel;
  const pods = await kube.list<Pod>('v1', 'Pod', { namespace: flags.meshNamespace, labelSelector: selector });
  const running = pods.items.filter((p) => p.status?.phase === 'Running' && p.status.podIP);
  if (running.length === 0) {
    throw new CliError(`no running meshd pod matches ${selector} in namespace ${flags.meshNamespace}; give --xds-address to reach a daemon directly`);
  }
  return running
    .map((p) => ({ name: p.metadata?.name ?? '', address: withPort(p.status!.podIP!, flags.xdsPort) }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

function withPort(address: string, port: number): string {
  if (/^\[.*\]:\d+$/.test(address) || /^[^:]+:\d+$/.test(address)) return address;
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

interface Credentials {
  readonly channel: grpc.ChannelCredentials;
  readonly token?: string;
  readonly options: Record<string, string | number>;
  /** The namespace of the node meshctl announces (default the mesh namespace). */
  readonly nodeNamespace?: string;
}

/**
 * The namespace of the SPIFFE identity in the leaf of `chain`, if any. meshctl speaks as a node of
 * its own identity's namespace, so that a daemon which checks that a stream's node matches its
 * identity lets the stream reach the debug views' own rule (and its message) instead of refusing
 * a node name meshctl made up.
 */
function identityNamespace(chain: Buffer): string | undefined {
  try {
    const san = new X509Certificate(chain).subjectAltName ?? '';
    for (const entry of san.split(/,\s*/)) if (entry.startsWith('URI:')) return parseSpiffeId(entry.slice(4))?.namespace;
  } catch {
    // not a certificate: the TLS handshake says so with its own words
  }
  return undefined;
}

async function readCertDir(dir: string): Promise<{ root: Buffer; key: Buffer; chain: Buffer }> {
  const read = async (name: string): Promise<Buffer> => {
    try {
      return await fs.readFile(path.join(dir, name));
    } catch (err) {
      throw new CliError(`--cert-dir: cannot read ${path.join(dir, name)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  return { root: await read('root-cert.pem'), key: await read('key.pem'), chain: await read('cert-chain.pem') };
}

/** A token of the mesh namespace's default service account, and the mesh's root certificate. */
async function tokenMode(kube: KubeClient, ns: string, timeoutMs: number): Promise<{ token: string; root?: Buffer }> {
  const res = await kube.request<{ status?: { token?: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/default/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [TOKEN_AUDIENCE], expirationSeconds: 600 } },
    timeoutMs,
  });
  const token = res.status?.token;
  if (!token) throw new CliError(`the API server issued no token for ${ns}/default`);
  const cm = await kube.find<{ data?: Record<string, string> } & import('../../../kube/types.js').KubeObject>({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: ROOT_CONFIGMAP });
  const root = cm?.data?.['root-cert.pem'];
  return { token, root: root ? Buffer.from(root) : undefined };
}

async function credentials(flags: XdsConnectFlags, client: (() => Promise<KubeClient>) | undefined): Promise<Credentials> {
  const options: Record<string, string | number> = { 'grpc.max_receive_message_length': MAX_MESSAGE };
  if (flags.plaintext) return { channel: grpc.credentials.createInsecure(), options };
  const authority = flags.authority || `meshd.${flags.meshNamespace}.svc`;
  options['grpc.ssl_target_name_override'] = authority;
  options['grpc.default_authority'] = authority;
  const verify = flags.insecure ? { checkServerIdentity: () => undefined, rejectUnauthorized: false } : {};
  if (flags.certDir) {
    const c = await readCertDir(flags.certDir);
    return { channel: grpc.credentials.createSsl(flags.insecure ? null : c.root, c.key, c.chain, verify), options, nodeNamespace: identityNamespace(c.chain) };
  }
  if (!client) throw new CliError('token mode needs a cluster: give --cert-dir, or --plaintext for a plaintext port');
  const { token, root } = await tokenMode(await client(), flags.meshNamespace, flags.timeoutMs);
  if (!root && !flags.insecure) {
    throw new CliError(`no root certificate to check meshd with: ConfigMap ${flags.meshNamespace}/${ROOT_CONFIGMAP} is missing; give --cert-dir or --insecure`);
  }
  return { channel: grpc.credentials.createSsl(flags.insecure ? null : root, null, null, verify), token, options };
}

/** The node meshctl announces: a sidecar-shaped id in the mesh namespace (debug streams never register as proxies). */
function nodeOf(ns: string): { id: string; metadata: Record<string, unknown> } {
  return { id: `sidecar~0.0.0.0~meshctl-${process.pid}.${ns}~${ns}.svc.cluster.local`, metadata: { MESHCTL: 'true', NAMESPACE: ns, [PARTS_METADATA]: 'true' } };
}

/** Asks `view` (with `query`) of each target; one result per target, in order, failures included. */
export async function queryDebug<T = unknown>(
  flags: XdsConnectFlags,
  targets: readonly XdsTarget[],
  view: string,
  query: Readonly<Record<string, string>> = {},
  client?: () => Promise<KubeClient>,
): Promise<Array<DebugResult<T>>> {
  const creds = await credentials(flags, client);
  const q = new URLSearchParams(query).toString();
  const typeUrl = `${DEBUG_TYPE_PREFIX}${view}${q ? `?${q}` : ''}`;
  return Promise.all(targets.map((t) => askOne<T>(t, typeUrl, creds, flags)));
}

async function askOne<T>(target: XdsTarget, typeUrl: string, creds: Credentials, flags: XdsConnectFlags): Promise<DebugResult<T>> {
  const client = new grpc.Client(target.address, creds.channel, creds.options);
  const metadata = new grpc.Metadata();
  if (creds.token) metadata.set('authorization', `Bearer ${creds.token}`);
  const node = nodeOf(creds.nodeNamespace ?? flags.meshNamespace);
  return new Promise<DebugResult<T>>((resolve) => {
    let settled = false;
    const call = client.makeBidiStreamRequest<Uint8Array, Buffer>(ADS_METHOD, (m) => Buffer.from(m), (b) => b, metadata, { deadline: Date.now() + flags.timeoutMs });
    const done = (r: DebugResult<T>): void => {
      if (settled) return;
      settled = true;
      call.cancel();
      client.close();
      resolve(r);
    };
    // the items of the parts of an answer in parts so far, joined as each part arrives
    let joined: unknown[] | undefined;
    call.on('data', (raw: Buffer) => {
      try {
        const res = DiscoveryResponse.decode(raw);
        const any = res.resources[0];
        if (!any) return done({ target, error: 'empty answer' });
        const body = JSON.parse(StringValue.decode(any.value).value) as unknown;
        if (res.versionInfo === PART_VERSION || joined) {
          if (!Array.isArray(body)) return done({ target, error: 'unreadable answer: a part of an answer in parts is not a list' });
          joined ??= [];
          for (const item of body) joined.push(item);
          if (res.versionInfo === PART_VERSION) return;
          return done({ target, body: joined as T });
        }
        done({ target, body: body as T });
      } catch (err) {
        done({ target, error: `unreadable answer: ${(err as Error).message}` });
      }
    });
    call.on('error', (err: { code?: number; details?: string; message: string }) => {
      const code = err.code !== undefined ? grpc.status[err.code] : undefined;
      const reason =
        err.code === grpc.status.DEADLINE_EXCEEDED
          ? `no answer within ${flags.timeoutMs / 1000}s`
          : err.code === grpc.status.UNAVAILABLE
            ? unavailableReason(err.details || err.message, flags)
            : `${err.details || err.message}${code ? ` (${code})` : ''}`;
      done({ target, error: reason });
    });
    call.on('end', () => done({ target, error: 'the stream ended without an answer' }));
    call.write(DiscoveryRequest.encode(DiscoveryRequest.fromPartial({ node: { id: node.id, metadata: node.metadata }, typeUrl })).finish());
  });
}

/**
 * Why a daemon could not be reached, in the user's terms: the transport's own reason without
 * grpc-js' wrapping, and for a failed TLS handshake what was checked and the flags that change it.
 */
export function unavailableReason(details: string, flags: Pick<XdsConnectFlags, 'plaintext' | 'insecure' | 'certDir' | 'authority' | 'meshNamespace'>): string {
  const reason = details
    .replace(/^No connection established\. Last error: /, '')
    .replace(/^Error: /, '')
    .replace(/\.? ?Resolution note: .*$/s, '')
    .trim();
  if (!flags.plaintext && /certificate|altnames|SSL|TLS|handshake|self.signed/i.test(reason)) {
    const name = flags.authority || `meshd.${flags.meshNamespace}.svc`;
    const roots = flags.certDir ? `${path.join(flags.certDir, 'root-cert.pem')} (--cert-dir)` : `ConfigMap ${flags.meshNamespace}/${ROOT_CONFIGMAP}`;
    return `TLS handshake failed: ${reason} (meshd's certificate was checked against the roots of ${roots} and for the name ${name}${flags.authority ? ' (--authority)' : ''}; --insecure skips both checks)`;
  }
  if (flags.plaintext && !/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH/.test(reason)) return `unreachable (${reason}); --plaintext speaks HTTP/2 without TLS, which a TLS port (15012) does not answer`;
  return `unreachable (${reason})`;
}

/** The answers, or a CliError when no daemon answered (naming each one's reason). */
export function answered<T>(results: ReadonlyArray<DebugResult<T>>): Array<DebugResult<T> & { body: T }> {
  const ok = results.filter((r): r is DebugResult<T> & { body: T } => r.body !== undefined);
  if (ok.length === 0) throw new CliError(results.map((r) => `meshd ${r.target.name}: ${r.error ?? 'no answer'}`).join('; '));
  return ok;
}
