/**
 * The spec's ca_server_* metrics, on the daemon's registry. Failure counters carry a `reason`
 * label (a short fixed word, never client input) so an operator can tell a wrong audience from an
 * expired token.
 *
 * The expiry gauges are computed when scraped, from what the daemon signs with at that moment
 * (`setExpirySource`): a root that expires without a rotation shows as negative on the next scrape,
 * not only after the next change of the signing material.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Certificate } from './x509.js';

/** What the expiry gauges read at each scrape; undefined: nothing to report (the gauge stays as it is). */
export interface ExpirySource {
  /** When the root the daemon signs under expires. */
  root(): Date | undefined;
  /** When the first certificate of the chain handed out with each leaf (leaf excluded) expires. */
  chain(): Date | undefined;
}

export function createCaMetrics(registry: Registry, now: () => number = Date.now) {
  const r = [registry];
  let source: ExpirySource | undefined;
  const expiryGauge = (name: string, help: string, pick: (s: ExpirySource) => Date | undefined): Gauge =>
    new Gauge({
      name,
      help,
      registers: r,
      collect() {
        const at = source ? pick(source) : undefined;
        if (at) this.set(expiryValue(at, now()));
      },
    });
  return {
    csrCount: new Counter({ name: 'ca_server_csr_count', help: 'CSRs received by the CA server.', registers: r }),
    csrParsingErrors: new Counter({ name: 'ca_server_csr_parsing_err_count', help: 'Errors parsing a CSR.', labelNames: ['reason'], registers: r }),
    csrSignErrors: new Counter({ name: 'ca_server_csr_sign_err_count', help: 'Errors signing a CSR.', labelNames: ['reason'], registers: r }),
    idExtractionErrors: new Counter({ name: 'ca_server_id_extraction_err_count', help: 'Errors extracting the ID from a CSR.', labelNames: ['reason'], registers: r }),
    authenticationFailures: new Counter({ name: 'ca_server_authentication_failure_count', help: 'Authentication failures.', labelNames: ['reason'], registers: r }),
    successIssuance: new Counter({ name: 'ca_server_success_cert_issuance_count', help: 'Successful certificate issuances.', registers: r }),
    rootExpiry: expiryGauge('ca_server_root_cert_expiry_timestamp', 'Unix time in seconds when the root cert expires; negative means expired.', (s) => s.root()),
    chainExpiry: expiryGauge('ca_server_cert_chain_expiry_timestamp', 'Unix time in seconds when the CA cert chain expires; negative means already expired.', (s) => s.chain()),
    /** Where the expiry gauges read from from now on (the CA, or the external signer's roots). */
    setExpirySource(s: ExpirySource): void {
      source = s;
    },
  };
}

export type CaMetrics = ReturnType<typeof createCaMetrics>;

/** The expiry gauges' value: the time in Unix seconds, negated once it has passed. */
export function expiryValue(at: Date, now = Date.now()): number {
  const s = Math.floor(at.getTime() / 1000);
  return at.getTime() > now ? s : -s;
}

/** The earliest expiry among `certs` (undefined for none). */
export function earliestExpiry(certs: ReadonlyArray<Certificate>): Date | undefined {
  if (certs.length === 0) return undefined;
  return new Date(Math.min(...certs.map((c) => c.notAfter.getTime())));
}

/**
 * The expiry source of a signer known only by its trust bundle (EXTERNAL_CA): the chain the daemon
 * hands out after the signer's certificate is that bundle, so both gauges read its earliest expiry.
 */
export function bundleExpirySource(bundle: () => ReadonlyArray<Certificate>): ExpirySource {
  return { root: () => earliestExpiry(bundle()), chain: () => earliestExpiry(bundle()) };
}
