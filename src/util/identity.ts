/**
 * Stable small ids for immutable objects. Model objects are never mutated, so an object's id is a
 * cheap, exact stand-in for its content in cache keys: an unchanged service or rule keeps its id
 * across snapshots, a changed one is a new object with a new id.
 */
const ids = new WeakMap<object, number>();
let next = 1;

export function objectId(o: object | undefined): number {
  if (o === undefined) return 0;
  let id = ids.get(o);
  if (id === undefined) {
    id = next++;
    ids.set(o, id);
  }
  return id;
}
