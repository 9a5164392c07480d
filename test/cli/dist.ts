/** The built programs (dist/cli/), for tests that run them as processes. */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './spec-tables.js';

/** The compiled programs, and `meshctl-bundle`: meshctl as users get it (dist/bin/, scripts/bundle.mjs). */
export type Program = 'meshctl' | 'mesh-discovery' | 'mesh-operator' | 'meshctl-bundle';

/** Path of the built program; throws, saying how to build it, when it is missing. */
export function distProgram(name: Program): string {
  const file = name === 'meshctl-bundle' ? path.join(REPO_ROOT, 'dist/bin/meshctl.js') : path.join(REPO_ROOT, 'dist/cli', `${name}.js`);
  if (!fs.existsSync(file)) throw new Error(`${path.relative(REPO_ROOT, file)} is missing: run \`npm run build\` first`);
  return file;
}
