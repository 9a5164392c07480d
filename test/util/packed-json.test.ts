/**
 * A value packed into JSON slices (a worker's answer, docs/adr/0204) comes back equal, deep-frozen,
 * with its keys in their order, whatever nests inside what.
 */
import { packJson, unpackYielding } from '../../src/util/packed-json.js';

function isDeepFrozen(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return true;
  return Object.isFrozen(v) && Object.values(v).every(isDeepFrozen);
}

describe('packJson / unpackYielding', () => {
  const value = {
    kind: 'ServiceEntry',
    spec: {
      hosts: ['a.example.com'],
      endpoints: Array.from({ length: 5_000 }, (_, k) => ({ address: `10.0.${k >> 8}.${k & 255}`, labels: { version: `v${k % 3}`, ['__proto__']: 'x' }, weight: k % 7 === 0 ? null : k })),
      big: { text: 'é€😀'.repeat(3_000), nested: [[1, 2, [3, { deep: 'x'.repeat(500) }]], 'ü'.repeat(2_000)] },
      '10': 'an index-like key',
    },
    empty: { list: [], map: {} },
  };
  const roundTrip = JSON.parse(JSON.stringify(value)) as unknown;

  it.each([64, 1_000, 1 << 20])('returns an equal, frozen value in slices of %d characters', async (slice) => {
    const { plans, buffer } = packJson([value, 'plain', 42, null], slice);
    const back = await Promise.all(plans.map((p) => unpackYielding(p, buffer)));
    expect(back).toEqual([roundTrip, 'plain', 42, null]);
    expect(JSON.stringify(back[0])).toBe(JSON.stringify(value));
    expect(isDeepFrozen(back[0])).toBe(true);
    // a key "__proto__" is an ordinary entry, as JSON.parse makes it
    const labels = (back[0] as typeof value).spec.endpoints[1].labels;
    expect(Object.keys(labels)).toEqual(['version', '__proto__']);
    expect(Object.getPrototypeOf(labels)).toBe(Object.prototype);
  });

  it('cuts a large array into many slices', () => {
    const { plans } = packJson([value.spec.endpoints], 1_000);
    const plan = plans[0];
    expect('a' in plan && plan.a.length).toBeGreaterThan(100);
  });
});
