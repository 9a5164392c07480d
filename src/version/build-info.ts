/**
 * Build information of this installation. The version comes from package.json, read at run time
 * relative to this module (the same path from src/ and dist/). Revision, build status and tag
 * come, in this order, from `build-stamp.json` beside this module (a build step may write it:
 * `{"revision": "...", "status": "Clean", "tag": "v1.2.3"}`), from the variables
 * MESH_BUILD_GIT_REVISION, MESH_BUILD_STATUS and MESH_BUILD_TAG, else `unknown`.
 */
import fs from 'node:fs';

export interface BuildInfo {
  readonly version: string;
  readonly revision: string;
  readonly nodeVersion: string;
  readonly status: string;
  readonly tag: string;
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
    version: text(readJson(PACKAGE_URL)?.version) ?? 'unknown',
    revision: text(stamp.revision) ?? text(env.MESH_BUILD_GIT_REVISION) ?? 'unknown',
    nodeVersion: process.version,
    status: text(stamp.status) ?? text(env.MESH_BUILD_STATUS) ?? 'unknown',
    tag: text(stamp.tag) ?? text(env.MESH_BUILD_TAG) ?? 'unknown',
  });
}
