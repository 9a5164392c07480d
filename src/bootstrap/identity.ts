/**
 * Wiring of workload identity (docs/adr/0041–0043): the CA and where its root lives, the
 * certificate service, the roots of other trust domains, the secured port's serving certificate,
 * and the xDS authorizers of both ports. Everything here is decided from `SecuritySettings`
 * (src/security/settings.ts), which refused at start-up whatever cannot work.
 *
 * Where the self-signed root lives: with a cluster, the Secret `mesh-ca-secret` of the daemon's
 * namespace; without one but with `--configDir`, the directory `<configDir>/.mesh-ca` (the file
 * source ignores hidden entries); with neither, memory only (logged).
 */
import * as grpc from '@grpc/grpc-js';
import { join, resolve } from 'node:path';
import { CertificateAuthority, type WorkloadSigner } from '../ca/authority.js';
import { ClusterSigner, clusterCaOf } from '../ca/cluster-signer.js';
import { CryptoPool } from '../ca/crypto-pool.js';
import { CaMaterialError, trustBundlePem, type SigningMaterial } from '../ca/material.js';
import type { TrustBundleSource } from '../controllers/ca-root-cert/controller.js';
import { PluginReload } from '../controllers/ca-plugin/controller.js';
import { rootRotationController } from '../controllers/ca-root-rotation/controller.js';
import type { SyncErrorCounter } from '../controllers/runtime/index.js';
import { bundleExpirySource, type CaMetrics } from '../ca/metrics.js';
import { loadPluginCa } from '../ca/plugin.js';
import { decodePemAll } from '../ca/pem.js';
import { RootRotator } from '../ca/rotation.js';
import { SecretCaStore } from '../ca/secret-store.js';
import { loadOrCreateSelfSigned } from '../ca/self-signed.js';
import { DirectoryCaStore, MemoryCaStore, type CaStore } from '../ca/store.js';
import { parseCertificate, type Certificate } from '../ca/x509.js';
import { ConfigError } from '../util/config-error.js';
import { KubeClient } from '../kube/client.js';
import { getLogger } from '../log/logger.js';
import { Admission, type AdmissionHold } from '../security/admission.js';
import type { PushActivity } from '../model/push-activity.js';
import { LoopLag } from '../util/loop-lag.js';
import { ChainAuthenticator, type Authenticator } from '../security/authn.js';
import { CertificateService } from '../security/certificate-service.js';
import { ClientCertificateAuthenticator, type IssuerSource } from '../security/client-cert.js';
import { ServingCertificate, ServingCertificateError } from '../security/serving-cert.js';
import type { SecuritySettings } from '../security/settings.js';
import { SpiffeBundleError, SpiffeBundles } from '../security/spiffe-bundles.js';
import { TokenReviewAuthenticator } from '../security/token-review.js';
import { xdsAuthorizer } from '../security/xds-auth.js';
import type { StreamAuthorizer } from '../security/stream-authorizer.js';
import { readFile } from 'node:fs/promises';

/** Hidden directory of the local self-signed CA under `--configDir`. */
export const LOCAL_CA_DIR = '.mesh-ca';

export interface IdentityInputs {
  readonly settings: SecuritySettings;
  /** The cluster the daemon reads, when it has one. */
  readonly cluster?: { readonly kubeconfig: string; readonly qps: number; readonly burst: number };
  readonly namespace: string;
  readonly configDir?: string;
  readonly trustDomain: () => string;
  /** The ca_server_* metrics (./daemon-metrics.ts). */
  readonly caMetrics: CaMetrics;
  /** controller_sync_errors_total, for the CA's controllers (root rotation). */
  readonly syncErrors?: SyncErrorCounter;
  /** The webhook server needs the serving certificate too (`--httpsAddr`). */
  readonly webhooks?: boolean;
  /** xDS pushes in flight: the certificate service's admission steps aside for them (docs/adr/0140). */
  readonly pushes?: PushActivity;
}

export interface IdentitySide {
  readonly ca?: CertificateAuthority;
  readonly caMetrics: CaMetrics;
  readonly certificateService?: CertificateService;
  readonly serving?: ServingCertificate;
  /** Authorizer of the plaintext port (undefined: it serves every stream). */
  readonly plaintextAuth?: StreamAuthorizer;
  readonly secureAuth?: StreamAuthorizer;
  /** Where the CA's root lives ("Secret mesh-system/mesh-ca-secret", "directory …", a plug-in source). */
  readonly caSource?: string;
  /** The roots workloads must trust, for the trust distribution controller (absent: no CA). */
  readonly trustBundle?: TrustBundleSource;
  stop(): void;
}

function storeFor(i: IdentityInputs, client: KubeClient | undefined): CaStore {
  if (client) return new SecretCaStore(client, i.namespace);
  if (i.configDir) return new DirectoryCaStore(join(resolve(i.configDir), LOCAL_CA_DIR));
  return new MemoryCaStore();
}

async function rootsFromDir(dir: string): Promise<Certificate[]> {
  try {
    const pem = await readFile(join(resolve(dir), 'root-cert.pem'), 'utf8');
    return decodePemAll(pem, 'CERTIFICATE', `ROOT_CA_DIR ${dir} root-cert.pem`).map((d) => parseCertificate(d));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Event-loop lag above which the certificate service admits nothing new (docs/adr/0140). */
export const ADMISSION_LAG_MS = 30;

/**
 * What the certificate service steps aside for (docs/adr/0140): an xDS push in flight, or an event
 * loop running more than ADMISSION_LAG_MS late. Certificates can wait a few hundred milliseconds;
 * a push delayed by a storm of them delays every proxy.
 */
function admissionHold(pushes: PushActivity | undefined, lag: LoopLag): AdmissionHold {
  return {
    held: () => (pushes?.busy ?? false) || lag.lagging,
    onRelease: (l) => {
      const a = pushes?.onIdle(l);
      const b = lag.onRecovered(l);
      return () => {
        a?.();
        b();
      };
    },
  };
}

/**
 * The certificate service's admission gate: with the built-in CA, twice what the workers hold, so
 * they always have the next job while the rest wait cheaply; through the Kubernetes CSR API (each
 * request waits on the API server and its signer) more at once. The line is bounded either way.
 */
function admissionFor(builtIn: boolean, pool: CryptoPool | undefined, hold: AdmissionHold): ConstructorParameters<typeof Admission>[0] {
  const maxActive = builtIn ? 2 * (pool?.capacity ?? 4) : 64;
  return { maxActive, maxQueued: 10_000, maxQueuedBytes: 32 << 20, hold };
}

/** Starts the identity side; a problem a user can fix is a `ConfigError` naming what to change. */
export async function startIdentity(i: IdentityInputs): Promise<IdentitySide> {
  const s = i.settings;
  const log = getLogger('ca');
  const authnLog = getLogger('authn');
  const caMetrics = i.caMetrics;
  const client = i.cluster
    ? (await KubeClient.create({ kubeconfig: i.cluster.kubeconfig || undefined, qps: i.cluster.qps, burst: i.cluster.burst, userAgent: 'mesh-discovery/identity' })).client
    : undefined;
  const stops: Array<() => void> = [() => client?.close()];
  const stop = (): void => {
    for (const f of stops.reverse()) f();
  };
  try {
    // Roots of other trust domains.
    const bundles = s.spiffeBundles.length > 0 ? new SpiffeBundles(s.spiffeBundles, getLogger('spiffe')) : undefined;
    if (bundles) {
      try {
        await bundles.start();
      } catch (err) {
        if (err instanceof SpiffeBundleError) throw new ConfigError(err.message);
        throw err;
      }
      stops.push(() => bundles.stop());
    }

    // CSR reading and certificate signing run in worker threads, never on the event loop (ADR 0067).
    const pool = s.issuer.kind !== 'none' ? new CryptoPool({ log }) : undefined;
    if (pool) stops.push(() => void pool.close());

    // The CA, or the registration authority.
    let ca: CertificateAuthority | undefined;
    let signer: WorkloadSigner | undefined;
    let caSource: string | undefined;
    if (s.issuer.kind === 'ca') {
      try {
        const plugin = await loadPluginCa({ client, namespace: i.namespace, rootCaDir: s.ca.rootCaDir, requireSecret: s.ca.useRemoteCerts });
        if (plugin) {
          ca = new CertificateAuthority(plugin.material, { metrics: caMetrics, log, pool });
          caSource = plugin.source;
          log.info({ source: plugin.source, chain: plugin.material.intermediates.length + 1, notAfter: plugin.material.signingCert.notAfter.toISOString() }, 'CA: plug-in CA loaded; it signs instead of a self-signed root');
          const reload = new PluginReload({
            client,
            namespace: i.namespace,
            rootCaDir: s.ca.rootCaDir,
            requireSecret: s.ca.useRemoteCerts,
            ca,
            from: plugin.from,
            log,
            syncErrors: i.syncErrors,
          });
          reload.start();
          stops.push(() => void reload.stop());
        } else {
          const store = storeFor(i, client);
          const selfSigned = { trustDomain: i.trustDomain(), rsaKeySize: s.ca.rsaKeySize, ttlMs: s.ca.rootTtlMs };
          const loaded = await loadOrCreateSelfSigned(store, selfSigned);
          ca = new CertificateAuthority(loaded.material, { metrics: caMetrics, log, pool });
          caSource = store.description;
          log.info({ store: store.description, created: loaded.created, notAfter: loaded.material.root.notAfter.toISOString() }, loaded.created ? 'CA: self-signed root created' : 'CA: self-signed root loaded');
          if (!store.durable) log.warn('CA: the self-signed root is kept in memory only (no cluster and no --configDir): a restart makes a new root and earlier certificates stop verifying');
          const rotatorLog = getLogger('rootcertrotator');
          const rotator = new RootRotator(ca, store, loaded.version, { ...selfSigned, checkIntervalMs: s.ca.checkIntervalMs, gracePeriodPercentile: s.ca.gracePeriodPercentile, jitter: s.ca.jitter }, rotatorLog);
          if (s.ca.checkIntervalMs > 0) {
            const rotation = rootRotationController({ rotator, checkIntervalMs: s.ca.checkIntervalMs, jitter: s.ca.jitter, log: rotatorLog, syncErrors: i.syncErrors });
            rotation.start();
            stops.push(() => void rotation.stop());
          } else {
            rotatorLog.info('root rotation disabled (CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL <= 0)');
          }
        }
      } catch (err) {
        if (err instanceof CaMaterialError) throw new ConfigError(err.message);
        throw err;
      }
      signer = ca;
    } else if (s.issuer.kind === 'cluster-signer') {
      const roots = [...(await rootsFromDir(s.ca.rootCaDir)), ...(client ? clusterCaOf(client) : [])];
      if (roots.length === 0) throw new ConfigError('EXTERNAL_CA: no root for the external signer: put its root-cert.pem in ROOT_CA_DIR (the kubeconfig has no cluster CA either)');
      const external = new ClusterSigner(client!, { signerName: s.issuer.signerName, roots, log });
      caMetrics.setExpirySource(bundleExpirySource(() => external.trustBundle()));
      signer = external;
      caSource = `Kubernetes CSR API, signer ${s.issuer.signerName}`;
      log.info({ signer: s.issuer.signerName }, 'CA: workload certificates are signed through the Kubernetes CSR API (EXTERNAL_CA)');
    }

    // Who may sign workload certificates, per trust domain (client-certificate authentication).
    // One list per signing material: its identity tells the authenticator when issuers changed.
    const issuerLists = new WeakMap<SigningMaterial, ReadonlyArray<Certificate>>();
    const noIssuers: ReadonlyArray<Certificate> = [];
    const issuers: IssuerSource = {
      trustDomain: i.trustDomain,
      ownIssuers: () => {
        if (!ca) return signer?.trustBundle() ?? noIssuers;
        const m = ca.current();
        let list = issuerLists.get(m);
        if (!list) issuerLists.set(m, (list = [m.signingCert, ...m.intermediates, ...m.roots]));
        return list;
      },
      foreignIssuers: (td) => bundles?.forDomain(td) ?? [],
    };
    const tokens: Authenticator | undefined = client
      ? new TokenReviewAuthenticator(client, { ...s.tokens, trustDomain: i.trustDomain })
      : undefined;
    const chain = (acceptForeign: boolean): ChainAuthenticator =>
      new ChainAuthenticator([new ClientCertificateAuthenticator(issuers, acceptForeign), ...(tokens ? [tokens] : [])]);
    const caAuth = chain(false);
    const xdsAuth = chain(s.xds.skipValidateTrustDomain);

    let admission: Admission | undefined;
    if (signer) {
      const lag = new LoopLag(ADMISSION_LAG_MS);
      lag.start();
      admission = new Admission(admissionFor(s.issuer.kind === 'ca', pool, admissionHold(i.pushes, lag)));
      const gate = admission;
      stops.push(() => {
        gate.close();
        lag.stop();
      });
    }
    const certificateService = signer
      ? new CertificateService({
          authenticate: (c) => caAuth.authenticate(c),
          signer,
          metrics: caMetrics,
          log: getLogger('serverca'),
          defaultTtlMs: s.workloadTtl.defaultMs,
          maxTtlMs: s.workloadTtl.maxMs,
          readCsr: pool ? (pem) => pool.readCsr(pem) : undefined,
          admission,
        })
      : undefined;

    // The secured port's serving certificate.
    let serving: ServingCertificate | undefined;
    if ((s.secureGrpcAddr || i.webhooks) && s.servingCert.kind !== 'none') {
      try {
        serving = await ServingCertificate.start({
          source: s.servingCert,
          ca,
          dnsNames: s.dnsNames,
          ttlMs: s.workloadTtl.defaultMs,
          ciphers: s.ciphers,
          caCertFile: s.caCertFile,
          ownRoots: () => signer?.trustBundle() ?? [],
          foreignRoots: () => bundles?.all() ?? [],
          log,
        });
      } catch (err) {
        if (err instanceof ServingCertificateError) throw new ConfigError(err.message);
        throw err;
      }
      const srv = serving;
      stops.push(() => srv.stop());
      bundles?.onChange(() => srv.refreshRoots());
    }

    const failures = caMetrics.authenticationFailures;
    // XDS_AUTH=false with DISC_ENABLE_XDS_IDENTITY_CHECK: credentials are optional, but a stream that
    // presents one is held to its namespace (docs/adr/0142; start-up warns about the rest)
    const secureAuth =
      s.xds.auth || s.xds.identityCheck
        ? xdsAuthorizer({ required: s.xds.auth, identityCheck: s.xds.identityCheck, authenticate: (c) => xdsAuth.authenticate(c), failures, log: authnLog, port: 'secured' })
        : undefined;
    const plaintextAuth = s.xds.authPlaintext
      ? xdsAuthorizer({ required: true, identityCheck: s.xds.identityCheck, authenticate: (c) => xdsAuth.authenticate(c), failures, log: authnLog, port: 'plaintext' })
      : undefined;

    const authority = ca;
    const trustBundle: TrustBundleSource | undefined = authority
      ? { pem: () => trustBundlePem(authority.current()), onChange: (l) => authority.onChange(() => l()) }
      : signer
        ? { pem: () => signer!.trustBundle().map((c) => c.pem).join('') }
        : undefined;

    return { ca, caMetrics, certificateService, serving, plaintextAuth, secureAuth, caSource, trustBundle, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/** Binds the secured port: the ADS service and, when there is one, the certificate service. */
export async function bindSecurePort(
  identity: IdentitySide,
  address: string,
  ads: { serviceDefinition(): grpc.ServiceDefinition; handlers(authorize?: StreamAuthorizer): grpc.UntypedServiceImplementation },
  serverOptions: grpc.ServerOptions,
): Promise<{ server: grpc.Server; port: number }> {
  if (!identity.serving) throw new Error('secured port without a serving certificate');
  const server = new grpc.Server(serverOptions);
  server.addService(ads.serviceDefinition(), ads.handlers(identity.secureAuth));
  if (identity.certificateService) server.addService(identity.certificateService.serviceDefinition(), identity.certificateService.handlers());
  const port = await new Promise<number>((resolvePort, reject) =>
    server.bindAsync(address, identity.serving!.credentials, (err, p) => (err ? reject(err) : resolvePort(p))),
  );
  return { server, port };
}
