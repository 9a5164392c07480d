/**
 * A registration authority over the Kubernetes CSR API (EXTERNAL_CA=MESHD_RA_CLUSTER_API): after
 * the certificate service has authenticated the workload and checked that its CSR names only the
 * workload's own identity, the CSR goes to the cluster as a CertificateSigningRequest for signer
 * CLUSTER_SIGNER, the daemon approves it (it did the identity check), waits for the signer's
 * certificate, deletes the request and returns the chain with the signer's root last. The root is
 * `root-cert.pem` of ROOT_CA_DIR when present, else the cluster's own CA (which is what the
 * built-in kubernetes.io signers sign with).
 *
 * Needs RBAC: create/get/delete certificatesigningrequests, update their approval, and `approve`
 * on `signers` for the signer name.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.js';
import type { KubeObject } from '../kube/types.js';
import { SignerError, type WorkloadSigner } from './authority.js';
import { decodePemAll } from './pem.js';
import { issuedBy, parseCertificate, type Certificate } from './x509.js';

const API = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

interface CsrObject extends KubeObject {
  readonly status?: {
    readonly certificate?: string;
    readonly conditions?: ReadonlyArray<{ readonly type?: string; readonly status?: string; readonly reason?: string; readonly message?: string }>;
  };
}

export interface ClusterSignerOptions {
  readonly signerName: string;
  readonly roots: ReadonlyArray<Certificate>;
  readonly log: Logger;
  /** How long to wait for the signer (default 30 s). */
  readonly timeoutMs?: number;
  readonly pollMs?: number;
}

/** Usages a signer accepts: the kube-apiserver-client signer issues client certificates only. */
function usagesFor(signerName: string): string[] {
  const base = ['digital signature', 'key encipherment', 'client auth'];
  return signerName === 'kubernetes.io/kube-apiserver-client' ? base : [...base, 'server auth'];
}

function certificates(pem: string, what: string): Certificate[] {
  return decodePemAll(pem, 'CERTIFICATE', what).map((d, i) => parseCertificate(d, `${what} ${i + 1}`));
}

/** The cluster CA of a kubeconfig-loaded client, as certificates (empty when it has none). */
export function clusterCaOf(client: KubeClient): Certificate[] {
  const cluster = client.config.getCurrentCluster();
  if (cluster?.caData) return certificates(Buffer.from(cluster.caData, 'base64').toString('utf8'), 'cluster CA');
  return [];
}

export class ClusterSigner implements WorkloadSigner {
  readonly csrMustNameIdentity = true;

  constructor(
    private readonly client: KubeClient,
    private readonly o: ClusterSignerOptions,
  ) {
    if (o.roots.length === 0) throw new SignerError('unavailable', 'EXTERNAL_CA: no root for the external signer (no root-cert.pem in ROOT_CA_DIR and no cluster CA in the kubeconfig)');
  }

  trustBundle(): ReadonlyArray<Certificate> {
    return this.o.roots;
  }

  async sign(req: { readonly csrPem: string; readonly identity: string; readonly ttlMs: number }): Promise<string[]> {
    const name = `mesh-csr-${randomBytes(6).toString('hex')}`;
    const body = {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'mesh-discovery' } },
      spec: {
        request: Buffer.from(req.csrPem, 'utf8').toString('base64'),
        signerName: this.o.signerName,
        usages: usagesFor(this.o.signerName),
        expirationSeconds: Math.max(600, Math.round(req.ttlMs / 1000)),
      },
    };
    try {
      await this.client.request({ method: 'POST', path: API, body });
    } catch (err) {
      throw new SignerError('unavailable', `EXTERNAL_CA: creating the CertificateSigningRequest failed: ${(err as Error).message}`);
    }
    try {
      const created = await this.client.request<CsrObject>({ method: 'GET', path: `${API}/${name}` });
      await this.client.request({
        method: 'PUT',
        path: `${API}/${name}/approval`,
        body: {
          ...created,
          status: { ...(created.status ?? {}), conditions: [{ type: 'Approved', status: 'True', reason: 'MeshIdentityVerified', message: `mesh-discovery authenticated ${req.identity}` }] },
        },
      });
      const pem = await this.waitForCertificate(name);
      const chain = certificates(pem, `certificate of ${this.o.signerName}`);
      const leaf = chain[0];
      if (!leaf.altNames.uris.includes(req.identity)) throw new SignerError('internal', `EXTERNAL_CA: ${this.o.signerName} issued a certificate without ${req.identity}`);
      const top = chain[chain.length - 1];
      const root = this.o.roots.find((r) => r.der.equals(top.der) || issuedBy(top, r));
      if (!root) throw new SignerError('internal', `EXTERNAL_CA: the certificate of ${this.o.signerName} does not chain to the configured root`);
      const full = root.der.equals(top.der) ? chain : [...chain, root];
      return full.map((c) => c.pem);
    } finally {
      await this.client.request({ method: 'DELETE', path: `${API}/${name}` }).catch((err: unknown) => this.o.log.warn({ csr: name, err: (err as Error).message }, 'EXTERNAL_CA: could not delete the CertificateSigningRequest'));
    }
  }

  private async waitForCertificate(name: string): Promise<string> {
    const deadline = Date.now() + (this.o.timeoutMs ?? 30_000);
    for (;;) {
      const csr = await this.client.request<CsrObject>({ method: 'GET', path: `${API}/${name}` });
      const bad = csr.status?.conditions?.find((c) => (c.type === 'Denied' || c.type === 'Failed') && c.status === 'True');
      if (bad) throw new SignerError('internal', `EXTERNAL_CA: ${this.o.signerName} ${bad.type?.toLowerCase()} the request: ${bad.message ?? bad.reason ?? ''}`);
      if (csr.status?.certificate) return Buffer.from(csr.status.certificate, 'base64').toString('utf8');
      if (Date.now() >= deadline) throw new SignerError('unavailable', `EXTERNAL_CA: ${this.o.signerName} did not sign within ${Math.round((this.o.timeoutMs ?? 30_000) / 1000)} s`);
      await new Promise((r) => setTimeout(r, this.o.pollMs ?? 200));
    }
  }
}
