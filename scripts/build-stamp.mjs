#!/usr/bin/env node
// Writes the build stamp that `version` prints (src/version/build-info.ts reads it): the version
// from package.json, the git revision, whether the work tree had changes (status Clean or
// Modified), the tag on the revision, and the build time. `npm run build` runs it after tsc; the
// stamp lives in dist/ only and is never committed.
//
// Built outside git (a source archive, git missing), revision, status and tag are `unknown`; the
// version and build time are still there. SOURCE_DATE_EPOCH, when set, is the build time (for
// reproducible builds).
//
// Usage:  node scripts/build-stamp.mjs [--root <dir>] [--out <file>]
//         --root  the source tree (package.json, git); default: this repository
//         --out   default: <root>/dist/version/build-stamp.json, beside the compiled
//                 build-info.js, and <root>/dist/bin/build-stamp.json, beside meshctl's bundle
//                 (scripts/bundle.mjs; build-info.ts reads the stamp next to whichever runs)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
for (let i = 0; i < args.length; i += 2) {
  if (!['--root', '--out'].includes(args[i]) || args[i + 1] === undefined) {
    console.error(`build-stamp: unexpected argument ${args[i]} (usage: node scripts/build-stamp.mjs [--root <dir>] [--out <file>])`);
    process.exit(2);
  }
}
const root = resolve(opt('--root') ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const outs = opt('--out')
  ? [resolve(opt('--out'))]
  : [join(root, 'dist', 'version', 'build-stamp.json'), ...(existsSync(join(root, 'dist', 'bin')) ? [join(root, 'dist', 'bin', 'build-stamp.json')] : [])];

/** Output of a git command in the source tree, or undefined when it fails (no git, not a repository). */
function git(...gitArgs) {
  try {
    return execFileSync('git', ['-C', root, ...gitArgs], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version ?? 'unknown';
const revision = git('rev-parse', 'HEAD');
const changes = revision === undefined ? undefined : git('status', '--porcelain');
const tag = revision === undefined ? undefined : git('describe', '--tags', '--exact-match', 'HEAD');
const epoch = Number(process.env.SOURCE_DATE_EPOCH);
const buildTime = new Date(Number.isFinite(epoch) && process.env.SOURCE_DATE_EPOCH ? epoch * 1000 : Date.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');

const stamp = {
  version,
  revision: revision ?? 'unknown',
  status: changes === undefined ? 'unknown' : changes === '' ? 'Clean' : 'Modified',
  tag: tag || 'unknown',
  buildTime,
};
for (const out of outs) {
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(stamp, null, 2)}\n`);
}
console.log(`build-stamp: ${stamp.version} ${stamp.revision} (${stamp.status}) -> ${outs.join(', ')}`);
