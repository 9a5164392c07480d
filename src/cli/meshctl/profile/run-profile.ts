/**
 * What `meshctl profile list|dump|diff` do, behind src/cli/meshctl/commands/profile.ts.
 *
 * `dump` prints a profile resolved over `default` (and any `-f` files) as a MeshOperator document
 * (`-o yaml`, `-o json`) or as the `--set` flags that rebuild its spec (`-o flags`, one per line,
 * quoted for a POSIX shell). `-p/--config-path` prints only the subtree at that spec path (e.g.
 * `components.meshd`); with `-o flags` the paths stay full, so the flags still apply as they are.
 *
 * `diff` compares two profiles (names, or MeshOperator files) resolved the same way, as the
 * changed spec paths; exit code 0 when they are the same, 1 when they differ.
 */
import { stat } from 'node:fs/promises';
import { diffTrees } from '../../../install/diff/tree-diff.js';
import { InstallError } from '../../../install/errors.js';
import { PathError, getAt, parsePath, type PathSegment } from '../../../install/path.js';
import { resolveSpec, type ResolveRequest } from '../../../install/resolve.js';
import { shellQuote, toSetFlags } from '../../../install/set-values.js';
import { listProfiles, manifestSource } from '../../../install/sources.js';
import { isMap } from '../../../install/tree.js';
import { toYaml } from '../../../install/yaml-io.js';
import type { CommandOutcome } from '../../runner.js';

export const DUMP_FORMATS = ['yaml', 'json', 'flags'] as const;
export type DumpFormat = (typeof DUMP_FORMATS)[number];

export async function runProfileList(manifests?: string): Promise<CommandOutcome> {
  const names = await listProfiles(await manifestSource(manifests));
  return { stdout: `Mesh configuration profiles:\n${names.map((n) => `    ${n}\n`).join('')}` };
}

export interface DumpRequest {
  readonly profile?: string;
  readonly files?: readonly string[];
  readonly manifests?: string;
  readonly configPath?: string;
  readonly output?: string;
}

function configPathOf(text: string): PathSegment[] {
  try {
    const p = parsePath(text);
    return p[0]?.type === 'key' && p[0].key === 'spec' && p.length > 1 ? p.slice(1) : p;
  } catch (err) {
    if (err instanceof PathError) throw new InstallError(`--config-path ${JSON.stringify(text)}: ${err.message}`);
    throw err;
  }
}

export async function runProfileDump(req: DumpRequest): Promise<CommandOutcome> {
  const format = (req.output || 'yaml') as DumpFormat;
  if (!DUMP_FORMATS.includes(format)) throw new InstallError(`--output: invalid value "${req.output}" (choose from ${DUMP_FORMATS.join(', ')})`);
  const at = req.configPath ? configPathOf(req.configPath) : [];
  const resolved = await resolveSpec({ profile: req.profile, files: req.files, manifests: req.manifests });
  let value: unknown = at.length > 0 ? getAt(resolved.spec, at) : resolved.operator;
  if (value === undefined) {
    const fields = Object.keys(resolved.spec).join(', ');
    throw new InstallError(`--config-path ${JSON.stringify(req.configPath)}: nothing there in profile "${resolved.spec.profile}" (spec fields: ${fields})`);
  }
  if (format === 'flags') {
    value = at.length > 0 ? value : resolved.spec;
    const flags = toSetFlags(value, at);
    return { stdout: flags.map((f) => `--set ${shellQuote(f)}\n`).join('') };
  }
  if (format === 'json') return { stdout: `${JSON.stringify(value, null, 2)}\n` };
  return { stdout: isMap(value) || Array.isArray(value) ? toYaml(value) : `${String(value)}\n` };
}

async function isFile(p: string): Promise<boolean> {
  return stat(p).then((s) => s.isFile(), () => false);
}

async function requestFor(arg: string, manifests?: string): Promise<ResolveRequest> {
  if (/\.ya?ml$|\.json$|[/\\]/.test(arg) || (await isFile(arg))) return { files: [arg], manifests };
  return { profile: arg, manifests };
}

export async function runProfileDiff(a: string, b: string, manifests?: string): Promise<CommandOutcome> {
  const [left, right] = await Promise.all([resolveSpec(await requestFor(a, manifests)), resolveSpec(await requestFor(b, manifests))]);
  const lines = diffTrees(left.spec, right.spec);
  if (lines.length === 0) return { stdout: `Profiles ${a} and ${b} are identical\n` };
  return { stdout: `The difference between profiles ${a} and ${b}:\n${lines.map((l) => `  ${l.text}\n`).join('')}`, exitCode: 1 };
}
