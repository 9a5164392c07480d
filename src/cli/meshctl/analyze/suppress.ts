/**
 * `meshctl analyze --suppress <code>=<resource>`: drops findings by code and resource. The resource
 * is written `<Kind> <name>.<namespace>` (`<Kind> <name>` for cluster-scoped objects); `*` matches
 * any run of characters in the code or the resource, e.g. `MESH0102=VirtualService *.shop`.
 */
import { CliError } from '../../runner.js';

export interface Suppression {
  readonly text: string;
  readonly code: RegExp;
  readonly resource: RegExp;
}

function glob(pattern: string): RegExp {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`);
}

export function parseSuppressions(values: readonly string[]): Suppression[] {
  return values.map((text) => {
    const eq = text.indexOf('=');
    const code = eq < 0 ? '' : text.slice(0, eq).trim();
    const resource = eq < 0 ? '' : text.slice(eq + 1).trim();
    if (code === '' || resource === '') {
      throw new CliError(`--suppress ${JSON.stringify(text)}: expected <code>=<resource>, e.g. MESH0102=VirtualService reviews.default`);
    }
    if (resource !== '*' && !/^\S+ \S+$/.test(resource)) {
      throw new CliError(`--suppress ${JSON.stringify(text)}: the resource must read "<Kind> <name>.<namespace>" (or * for every resource)`);
    }
    return { text, code: glob(code), resource: glob(resource) };
  });
}

/** How findings name their resource, as `--suppress` matches it. */
export function resourceName(f: { readonly kind: string; readonly namespace: string; readonly name: string }): string {
  return `${f.kind} ${f.namespace ? `${f.name}.${f.namespace}` : f.name}`;
}

export function suppressed(list: readonly Suppression[], f: { readonly code: string; readonly kind: string; readonly namespace: string; readonly name: string }): boolean {
  const resource = resourceName(f);
  return list.some((s) => s.code.test(f.code) && s.resource.test(resource));
}
