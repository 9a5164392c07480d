#!/usr/bin/env node
/**
 * Bundles the programs users run into dist/bin/ (the package's `bin`s; see docs/adr/0025, 0194):
 *
 * - `meshctl`: the entry and everything it imports at start-up in one file, `dist/bin/meshctl.js`,
 *   with the npm packages inside it, so start-up reads one file instead of resolving a few hundred
 *   modules. Command bodies that meshctl imports lazily (`await import(...)`: the Kubernetes client,
 *   the installer, the analyzers, the generated protocol code they need) become chunks beside it
 *   (`dist/bin/chunk-*.js`), loaded only by the command that runs them.
 * - `mesh-discovery`, the daemon (and `crypto-worker`, its CA's worker thread): one bundle instead
 *   of ~450 ES modules, each with its module record and unminified source, costs the idle daemon
 *   about 20 MB less memory (ADR 0194). Its log lines still name `src/` positions: the logger maps
 *   frames through the source maps written beside every output (src/log/source-position.ts).
 * - `mesh-agent`, the agent in every injected pod, which the proxy image runs: the same saving,
 *   paid once per pod (ADR 0214).
 *
 * The output sits at the same depth as the modules of dist/ (`dist/bin/`), so paths the code finds
 * relative to itself (`../../manifests/`, `../../crds/`, `../../package.json`) stay right.
 *
 *   node scripts/bundle.mjs
 *
 * It also writes dist/bin/meta.json, esbuild's account of which sources went into which output
 * (bench/cli-startup.mjs reads it to name the packages a start-up loaded; not shipped).
 */
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = join(root, 'dist', 'bin');
const started = performance.now();

// Lowest runtime the bundle is built for: the bundled Kubernetes client's HTTP library needs 22.19.
const MIN_NODE = [22, 19];

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  // The daemon's worker thread is an entry of its own: the pool starts `./crypto-worker.js` beside
  // the module that holds it (src/ca/crypto-pool.ts), which in the bundle is a file of dist/bin/.
  // mesh-agent: the agent every injected pod runs, which the proxy image starts (ADR 0214).
  entryPoints: { meshctl: 'src/cli/meshctl.ts', 'mesh-discovery': 'src/cli/mesh-discovery.ts', 'mesh-agent': 'src/cli/mesh-agent.ts', 'crypto-worker': 'src/ca/crypto-worker.ts' },
  outdir,
  bundle: true,
  splitting: true,
  chunkNames: 'chunk-[hash]',
  format: 'esm',
  platform: 'node',
  target: `node${MIN_NODE.join('.')}`,
  // Whitespace and syntax only: identifiers keep their names, so stack traces of a bug stay readable.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'eof',
  // Maps beside each file (`x.js.map`, named by a comment at its end), without the sources' text:
  // they turn a stack frame's bundle position back into `src/<file>.ts:<line>`, which is all a
  // stack trace needs (the daemon starts with source maps on, ADR 0194).
  sourcemap: 'linked',
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
  banner: {
    js: [
      // CommonJS packages inside the bundle (undici, ws and others under the Kubernetes client)
      // `require` Node's built-in modules; an ES module has no `require` of its own.
      `import { createRequire as __meshCreateRequire } from 'node:module';`,
      `const require = __meshCreateRequire(import.meta.url);`,
      // An older Node would fail later with an obscure error inside a bundled package: say so
      // first. (The entry's static imports, the start-up chunks, are evaluated before this runs;
      // they hold only commander and the project's own start-up code.)
      `{ const [__major, __minor] = process.versions.node.split('.').map(Number);`,
      `  if (__major < ${MIN_NODE[0]} || (__major === ${MIN_NODE[0]} && __minor < ${MIN_NODE[1]})) {`,
      `    process.stderr.write('error: this program needs Node.js ${MIN_NODE.join('.')} or newer (running ' + process.version + ')\\n');`,
      `    process.exit(1);`,
      `  } }`,
    ].join('\n'),
  },
});

writeFileSync(join(outdir, 'meta.json'), JSON.stringify(result.metafile));
const files = readdirSync(outdir).filter((f) => f.endsWith('.js'));
const kib = (name) => ((result.metafile.outputs[relative(root, join(outdir, name))]?.bytes ?? 0) / 1024).toFixed(0);
console.log(
  `bundle: dist/bin/meshctl.js ${kib('meshctl.js')} KiB, mesh-discovery.js ${kib('mesh-discovery.js')} KiB + ${files.length - 2} chunks in ${(performance.now() - started).toFixed(0)} ms`,
);
