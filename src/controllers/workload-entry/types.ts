/**
 * The hooks the xDS server calls for auto-registration and health (wired by the server's owner):
 * `connected` when a proxy's stream is accepted (after its node was parsed into a Proxy),
 * `disconnected` when that stream ends, `healthReport` when the proxy reports the result of its
 * readiness probe. Every call returns at once; the work runs in the background per workload.
 */
import type { Proxy } from '../../model/proxy.js';

export interface ConnectionObserver {
  connected(proxy: Proxy): void | Promise<void>;
  disconnected(proxy: Proxy): void | Promise<void>;
}

export interface HealthReport {
  readonly healthy: boolean;
  /** Why the probe failed (or any detail the proxy sent). */
  readonly message?: string;
}

export interface HealthObserver {
  healthReport(proxy: Proxy, report: HealthReport): void | Promise<void>;
}

/** What the controller counts (the daemon binds these to the auto_registration_* metrics). */
export interface AutoRegistrationCounters {
  /** auto_registration_success_total: entries created. */
  readonly success: { inc(): void };
  /** auto_registration_updates_total: existing entries taken over or refreshed on connect. */
  readonly updates: { inc(): void };
  /** auto_registration_unregister_total: entries marked disconnected. */
  readonly unregister: { inc(): void };
  /** auto_registration_deletes_total: entries removed by the cleanup. */
  readonly deletes: { inc(): void };
  /** auto_registration_errors_total. */
  readonly errors: { inc(): void };
}
