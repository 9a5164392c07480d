/**
 * Build information of this installation, as `version` prints it for all three programs.
 *
 * `npm run build` writes `build-stamp.json` beside this module in dist/ (scripts/build-stamp.mjs:
 * version, git revision, status Clean or Modified, tag, build time; never committed). Each field
 * comes from the stamp, else from the variables MESH_BUILD_GIT_REVISION, MESH_BUILD_STATUS,
 * MESH_BUILD_TAG and MESH_BUILD_TIME (for packagers that build without git), else `unknown`; the
 * version falls back to package.json, read relative to this module (the same path from src/ and
 * dist/). Running from src/ (tests) there is no stamp.
 */
import fs from 'node:fs';

export interface BuildInfo {
  readonly version: string;
  readonly revision: string;
  readonly nodeVersion: string;
  /** `Clean` or `Modified` (the work tree had changes when built), or `unknown`. */
  readonly status: string;
  readonly tag: string;
  /** ISO 8601, UTC, seconds. */
  readonly buildTime: string;
}

function readJson(url: URL): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(url, 'utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

export const BUILD_STAMP_URL = new URL('./build-stamp.json', import.meta.url);
const PACKAGE_URL = new URL('../../package.json', import.meta.url);

export function getBuildInfo(env: Readonly<Record<string, string | undefined>> = process.env, stampUrl: URL = BUILD_STAMP_URL): BuildInfo {
  const stamp = readJson(stampUrl) ?? {};
  return Object.freeze({
    version: text(stamp.version) ?? text(readJson(PACKAGE_URL)?.version) ?? 'unknown',
    revision: text(stamp.revision) ?? text(env.MESH_BUILD_GIT_REVISION) ?? 'unknown',
    nodeVersion: process.version,
    status: text(stamp.status) ?? text(env.MESH_BUILD_STATUS) ?? 'unknown',
    tag: text(stamp.tag) ?? text(env.MESH_BUILD_TAG) ?? 'unknown',
    buildTime: text(stamp.buildTime) ?? text(env.MESH_BUILD_TIME) ?? 'unknown',
  });
}
