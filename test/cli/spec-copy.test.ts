/**
 * docs/spec/ is the project's own copy of the contract (three documents and CONVENTIONS.md), kept
 * verbatim. Where the shared original lies beside the repository (../shared, as in the team's
 * workspace), the copy must match it byte for byte; in a clone that stands alone there is nothing to
 * compare with and the test is skipped, saying so. This is the only test that looks outside the
 * repository, and only to compare. MESH_SHARED_DIR names the shared folder when it is elsewhere (a
 * git worktree of the project sits deeper than the main checkout).
 */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, SPEC_DIR } from './spec-tables.js';

const SHARED = path.resolve(REPO_ROOT, process.env.MESH_SHARED_DIR || '../shared');
const DOCUMENTS = ['daemon-mesh-discovery.md', 'meshctl-part1-global-admin-to-experimental.md', 'meshctl-part2-install-to-version.md'];
const original = (name: string): string => path.join(SHARED, name === 'CONVENTIONS.md' ? name : path.join('spec', name));

describe('the contract kept in docs/spec', () => {
  it('holds the three documents and CONVENTIONS.md, and nothing else', () => {
    expect(fs.readdirSync(SPEC_DIR).sort()).toEqual(['CONVENTIONS.md', ...DOCUMENTS].sort());
  });

  const shared = fs.existsSync(path.join(SHARED, 'spec'));
  // One line in the run's output, also when Jest does not list skipped tests.
  if (!shared) process.stderr.write(`spec-copy.test: comparison with the shared contract skipped: no ${SHARED}/spec beside this clone (docs/spec is the contract here)\n`);
  (shared ? it : it.skip)(
    shared ? `matches ${SHARED}/spec and CONVENTIONS.md byte for byte` : `matches the shared original — skipped: no ${SHARED}/spec beside this clone (docs/spec is the contract here)`,
    () => {
      for (const name of [...DOCUMENTS, 'CONVENTIONS.md']) {
        const copy = fs.readFileSync(path.join(SPEC_DIR, name), 'utf8');
        expect({ name, same: copy === fs.readFileSync(original(name), 'utf8') }).toEqual({ name, same: true });
      }
    },
  );
});
