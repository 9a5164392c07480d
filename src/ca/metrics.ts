/**
 * The spec's ca_server_* metrics, on the daemon's registry. Failure counters carry a `reason`
 * label (a short fixed word, never client input) so an operator can tell a wrong audience from an
 * expired token.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export function createCaMetrics(registry: Registry) {
  const r = [registry];
  return {
    csrCount: new Counter({ name: 'ca_server_csr_count', help: 'CSRs received by the CA server.', registers: r }),
    csrParsingErrors: new Counter({ name: 'ca_server_csr_parsing_err_count', help: 'Errors parsing a CSR.', labelNames: ['reason'], registers: r }),
    csrSignErrors: new Counter({ name: 'ca_server_csr_sign_err_count', help: 'Errors signing a CSR.', labelNames: ['reason'], registers: r }),
    idExtractionErrors: new Counter({ name: 'ca_server_id_extraction_err_count', help: 'Errors extracting the ID from a CSR.', labelNames: ['reason'], registers: r }),
    authenticationFailures: new Counter({ name: 'ca_server_authentication_failure_count', help: 'Authentication failures.', labelNames: ['reason'], registers: r }),
    successIssuance: new Counter({ name: 'ca_server_success_cert_issuance_count', help: 'Successful certificate issuances.', registers: r }),
    rootExpiry: new Gauge({ name: 'ca_server_root_cert_expiry_timestamp', help: 'Unix time in seconds when the root cert expires; negative means expired.', registers: r }),
    chainExpiry: new Gauge({ name: 'ca_server_cert_chain_expiry_timestamp', help: 'Unix time in seconds when the CA cert chain expires; negative means already expired.', registers: r }),
  };
}

export type CaMetrics = ReturnType<typeof createCaMetrics>;

/** The expiry gauges' value: the time in Unix seconds, negated once it has passed. */
export function expiryValue(at: Date, now = Date.now()): number {
  const s = Math.floor(at.getTime() / 1000);
  return at.getTime() > now ? s : -s;
}
