/**
 * Builds a benchmark: bench/<name>/*.ts → bench/dist/<name>/*.js for `node bench/build.mjs [name]`
 * (default `xds`; type checking is `tsc -p bench/tsconfig.json`).
 *
 * Each file is transpiled on its own with the root tsconfig's options. Imports of the project's code
 * (`../../src/…`, e.g. the generated protobuf code) are pointed at the daemon's own build output
 * (`dist/…`, made by `npm run build`), so the benchmark decodes with exactly the code the daemon
 * encodes with and no second copy is emitted (bench/dist holds only the benchmark's files).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const bench = dirname(fileURLToPath(import.meta.url));
const root = join(bench, '..');
const benchName = process.argv[2] ?? 'xds';
if (!/^[a-z][a-z0-9-]*$/.test(benchName)) throw new Error(`bench/build.mjs: "${benchName}" is not a benchmark folder name`);
const srcDir = join(bench, benchName);
const outDir = join(bench, 'dist', benchName);

const rootConfig = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile);
if (rootConfig.error) throw new Error(ts.flattenDiagnosticMessageText(rootConfig.error.messageText, '\n'));
const { options } = ts.convertCompilerOptionsFromJson(rootConfig.config.compilerOptions, root);
// one file at a time, always as an ES module (the package is "type": "module")
delete options.rootDir;
delete options.outDir;
options.moduleResolution = ts.ModuleResolutionKind.Bundler;
options.module = ts.ModuleKind.ES2022;
options.sourceMap = false;
options.inlineSourceMap = true;
options.inlineSources = true;

// Files are replaced one by one (write + rename), never by emptying the directory: a benchmark
// already running forks bench/dist/xds/driver.js for each of its runs.
mkdirSync(outDir, { recursive: true });
const built = new Set();
const SRC_FROM = /(['"])\.\.\/\.\.\/src\//g;
const SRC_TO = '$1../../../dist/';
let count = 0;
for (const name of readdirSync(srcDir)) {
  if (!name.endsWith('.ts')) continue;
  const file = join(srcDir, name);
  const out = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: options, fileName: file, reportDiagnostics: true });
  if (out.diagnostics?.length) {
    throw new Error(out.diagnostics.map((d) => `${name}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`).join('\n'));
  }
  const js = out.outputText.replace(SRC_FROM, SRC_TO);
  const target = join(outDir, name.replace(/\.ts$/, '.js'));
  writeFileSync(`${target}.${process.pid}.tmp`, js);
  renameSync(`${target}.${process.pid}.tmp`, target);
  built.add(target);
  count++;
}
for (const name of existsSync(outDir) ? readdirSync(outDir) : []) {
  if (name.endsWith('.js') && !built.has(join(outDir, name))) rmSync(join(outDir, name), { force: true });
}
console.log(`bench: built ${count} files into ${outDir}`);
