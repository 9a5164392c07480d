/**
 * Lease-based leader election with three electors against one Lease of the real API server:
 * exactly one leads; a leader that stops releases the lease and another takes over at once; a
 * leader that dies without releasing is replaced once the lease expires.
 */
import { LeaderElector } from '../../src/kube/leader-election.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from './helpers.js';
import { eventually } from '../support/eventually.js';

interface Lease {
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; leaseTransitions?: number };
}

let env: KubeTestEnv;
let ns: string;

beforeAll(async () => {
  env = await kubeTestEnv();
  ns = await createNamespace(env.client, 'kube-leader');
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await deleteNamespace(env?.client, ns);
  env?.client.close();
});

interface Candidate {
  readonly id: string;
  readonly elector: LeaderElector;
  readonly log: string[];
  leading: boolean;
  signal?: AbortSignal;
}

function candidates(lease: string, ids: string[], releaseOnStop = true): Candidate[] {
  return ids.map((id) => {
    const state: Omit<Candidate, 'elector'> = { id, log: [], leading: false };
    const elector = new LeaderElector({
      client: env.client,
      namespace: ns,
      name: lease,
      identity: id,
      leaseDurationMs: 3000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 400,
      releaseOnStop,
      onStartedLeading: (signal) => {
        state.leading = true;
        state.signal = signal;
        state.log.push('started');
      },
      onStoppedLeading: () => {
        state.leading = false;
        state.log.push('stopped');
      },
    });
    return Object.assign(state, { elector });
  });
}

/** Samples the candidates every 20 ms and records the largest number leading at once. */
function watchOverlap(cs: Candidate[]): { stop(): number } {
  let max = 0;
  const timer = setInterval(() => {
    max = Math.max(max, cs.filter((c) => c.leading).length);
  }, 20);
  return {
    stop() {
      clearInterval(timer);
      return max;
    },
  };
}

const leaseOf = (name: string) => env.client.get<Lease & { apiVersion: string; kind: string }>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', name, namespace: ns });

describe('leader election', () => {
  it('elects exactly one leader; a stopping leader releases and another takes over at once', async () => {
    const cs = candidates('release', ['a', 'b', 'c']);
    const overlap = watchOverlap(cs);
    try {
      cs.forEach((c) => c.elector.start());
      const first = await eventually('a leader', () => cs.find((c) => c.leading), { timeoutMs: 10_000 });
      await new Promise((r) => setTimeout(r, 1500)); // several renew rounds
      expect(cs.filter((c) => c.leading)).toEqual([first]);
      expect(cs.every((c) => c.elector.leader() === first.id)).toBe(true);
      expect((await leaseOf('release')).spec?.holderIdentity).toBe(first.id);

      const stoppedAt = performance.now();
      await first.elector.stop();
      expect(first.signal?.aborted).toBe(true);
      expect(first.log).toEqual(['started', 'stopped']);
      const second = await eventually('a new leader', () => cs.find((c) => c.leading && c !== first), { timeoutMs: 10_000 });
      // Released: no need to wait for the 3 s lease to expire (one retry period and a bit).
      expect(performance.now() - stoppedAt).toBeLessThan(2000);
      const lease = await leaseOf('release');
      expect(lease.spec?.holderIdentity).toBe(second.id);
      expect(lease.spec?.leaseTransitions).toBeGreaterThanOrEqual(1);
    } finally {
      await Promise.all(cs.map((c) => c.elector.stop()));
      expect(overlap.stop()).toBe(1);
    }
  });

  it('replaces a leader that died without releasing once its lease expires', async () => {
    const cs = candidates('expire', ['x', 'y', 'z'], false);
    const overlap = watchOverlap(cs);
    try {
      cs.forEach((c) => c.elector.start());
      const first = await eventually('a leader', () => cs.find((c) => c.leading), { timeoutMs: 10_000 });
      await new Promise((r) => setTimeout(r, 500));
      const diedAt = performance.now();
      await first.elector.stop(); // no release: the lease still names it
      expect((await leaseOf('expire')).spec?.holderIdentity).toBe(first.id);
      const second = await eventually('a new leader', () => cs.find((c) => c.leading && c !== first), { timeoutMs: 15_000 });
      const waited = performance.now() - diedAt;
      // Not before the 3 s lease has run out as seen by the others, and not much later.
      expect(waited).toBeGreaterThanOrEqual(2400);
      expect(waited).toBeLessThan(6000);
      expect((await leaseOf('expire')).spec?.holderIdentity).toBe(second.id);
      expect(cs.filter((c) => c.leading)).toEqual([second]);
    } finally {
      await Promise.all(cs.map((c) => c.elector.stop()));
      expect(overlap.stop()).toBe(1);
    }
  });
});
