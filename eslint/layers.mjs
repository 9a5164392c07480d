/**
 * The layers of src/, as data: the one place to edit when a folder is added, moved or removed
 * (docs/adr/0033-layer-rule.md). Bottom to top; a folder may import its own layer and the layers
 * below it, never a layer above. `npm run lint` enforces it (import-x/no-restricted-paths on
 * resolved paths, type-only imports included), and test/lint/ checks that every folder of src/ is
 * listed here and that no folder cycle remains (scripts/folder-cycles.mjs).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Folders directly under src/, grouped by layer, bottom first. */
export const LAYERS = [
  /* 0 */ ['util', 'version', 'metrics', 'log'],
  /* 1 */ ['kube', 'config', 'gen'],
  // ca: the certificate authority (X.509 over node:crypto; its root kept through kube), docs/adr/0040
  /* 2 */ ['model', 'ca'],
  // security: who is calling (TokenReview, client certificates), the certificate service, the xDS
  // stream authorizer; below xds, which sees only its seam (SEAMS)
  /* 3 */ ['registry', 'security'],
  // install is a library below the writers: the installation reconciler (src/controllers/installation)
  // and meshctl's commands call its engine; it imports nothing above model.
  /* 4 */ ['xds', 'analysis', 'install'],
  // every writer back to the cluster (src/controllers/<what>/, docs/adr/0030) and the HTTP servers
  /* 5 */ ['server', 'controllers'],
  // wires the daemon's and the operator's servers and controllers
  /* 6 */ ['bootstrap'],
  /* 7 */ ['cli'],
];

/**
 * Imports that go up today, allowed until the change named in `why` lands. `from` is a folder or a
 * file under src/, `to` a folder under src/. Only for imports another change is removing: an
 * exception no import needs any more fails test/lint/folder-cycles.test.ts, so the list only
 * shrinks. Empty since the controllers move (docs/adr/0030) removed the last upward imports.
 */
export const EXCEPTIONS = [];

/**
 * Lower folders that a folder may reach through named seam files only, not as a whole: `from` may
 * import of `to` (a folder under src/) only the files in `only` (relative to src/<to>/). The
 * transport stays a transport: the ADS server sees the per-port stream authorizer type and nothing
 * else of authentication (docs/adr/0042).
 */
export const SEAMS = [
  { from: 'xds', to: 'security', only: ['stream-authorizer.ts'], why: 'the ADS server calls a port\'s authorizer; authentication is not the transport\'s' },
];

/** Layer index of a folder under src/, or undefined when the table does not list it. */
export function layerOf(folder) {
  const i = LAYERS.findIndex((layer) => layer.includes(folder));
  return i < 0 ? undefined : i;
}

/** Folders a file of `folder` may not import: those of higher layers. */
export function forbiddenFor(folder) {
  const own = layerOf(folder);
  if (own === undefined) throw new Error(`eslint/layers.mjs: src/${folder} is in no layer`);
  return LAYERS.slice(own + 1).flat();
}

function zones(folder, allowed = []) {
  const own = layerOf(folder);
  const up = forbiddenFor(folder)
    .filter((f) => !allowed.includes(f))
    .map((f) => ({
      target: `./src/${folder}`,
      from: `./src/${f}`,
      message: `src/${folder} (layer ${own}) may not import src/${f} (layer ${layerOf(f)}): layers point down (eslint/layers.mjs).`,
    }));
  const seams = SEAMS.filter((s) => s.from === folder).map((s) => ({
    target: `./src/${folder}`,
    from: `./src/${s.to}`,
    except: s.only.map((f) => `./${f}`),
    message: `src/${folder} may import of src/${s.to} only its seam (${s.only.join(', ')}): ${s.why} (eslint/layers.mjs, SEAMS).`,
  }));
  return [...up, ...seams];
}

function rule(folder, allowed) {
  const z = zones(folder, allowed);
  // the top layer has nothing above it
  return { 'import-x/no-restricted-paths': z.length === 0 ? 'off' : ['error', { basePath: REPO_ROOT, zones: z }] };
}

function filesOf(from) {
  return from.endsWith('.ts') ? [`src/${from}`] : [`src/${from}/**/*.ts`];
}

/**
 * Flat-config blocks for `exceptions`, to follow the folders' blocks. A later block's options replace
 * the earlier ones for the files it matches, so an exception restates its folder's zones minus the
 * excepted one; exceptions on a file therefore also keep the exceptions of its folder.
 */
export function exceptionConfigs(exceptions = EXCEPTIONS) {
  // folder-wide exceptions first, so that a file's block (which keeps them) comes after its folder's
  const ordered = [...exceptions].sort((a, b) => Number(a.from.endsWith('.ts')) - Number(b.from.endsWith('.ts')));
  return ordered.map((e) => {
    const folder = e.from.split('/')[0];
    const allowed = exceptions.filter((o) => o.from.split('/')[0] === folder && (o.from === folder || o.from === e.from)).map((o) => o.to);
    return { files: filesOf(e.from), rules: rule(folder, allowed) };
  });
}

/** Flat-config blocks: one per folder, then those of the exceptions. */
export function layerConfigs() {
  const blocks = LAYERS.flat()
    .filter((folder) => folder !== 'gen') // generated, not linted; imports into it are checked
    .map((folder) => ({ files: [`src/${folder}/**/*.ts`], rules: rule(folder) }));
  return [...blocks, ...exceptionConfigs()];
}
