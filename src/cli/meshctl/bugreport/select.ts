/**
 * bug-report's proxy-log selection (spec part 1): `--include` / `--exclude` specs
 * `ns/dep/pod/container/labels/annotations`, each part a comma-separated list (OR), parts AND-ed,
 * any part empty. `*` globs every name; label and annotation values (not keys) may end in `*`. A
 * container is taken when it matches at least one include spec (or none is given) and no exclude
 * spec. A pod's deployment is read from its owner ReplicaSet's name (`<deployment>-<hash>`).
 */
import { CliError } from '../../runner.js';

export interface SelectionSpec {
  readonly namespaces: readonly string[];
  readonly deployments: readonly string[];
  readonly pods: readonly string[];
  readonly containers: readonly string[];
  readonly labels: ReadonlyArray<readonly [string, string]>;
  readonly annotations: ReadonlyArray<readonly [string, string]>;
  /** The text it was read from, for messages. */
  readonly text: string;
}

/** The default `--exclude`: the orchestrator's system namespaces. */
export const DEFAULT_EXCLUDE: readonly string[] = ['kube-system,kube-public,kube-node-lease,local-path-storage'];

const list = (part: string | undefined): string[] =>
  (part ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

function pairs(part: string | undefined, what: string, flag: string, text: string): Array<readonly [string, string]> {
  return list(part).map((item) => {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new CliError(`${flag}: ${JSON.stringify(text)}: ${what} ${JSON.stringify(item)} is not key=value`);
    const key = item.slice(0, eq);
    if (key.includes('*')) throw new CliError(`${flag}: ${JSON.stringify(text)}: ${what} keys cannot use *: ${JSON.stringify(key)}`);
    return [key, item.slice(eq + 1)] as const;
  });
}

/** One `--include`/`--exclude` value; a CliError naming `flag` when malformed. */
export function parseSelection(text: string, flag: string): SelectionSpec {
  const parts = text.split('/');
  if (parts.length > 6) throw new CliError(`${flag}: ${JSON.stringify(text)} has ${parts.length} parts; the form is ns/dep/pod/container/labels/annotations`);
  return {
    namespaces: list(parts[0]),
    deployments: list(parts[1]),
    pods: list(parts[2]),
    containers: list(parts[3]),
    labels: pairs(parts[4], 'label', flag, text),
    annotations: pairs(parts[5], 'annotation', flag, text),
    text,
  };
}

/** `*` anywhere matches any run of characters. */
export function glob(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value;
  const re = new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');
  return re.test(value);
}

export interface SelectablePod {
  readonly namespace: string;
  readonly name: string;
  readonly deployment: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

const anyOf = (patterns: readonly string[], value: string): boolean => patterns.length === 0 || patterns.some((p) => glob(p, value));
const kvOf = (want: ReadonlyArray<readonly [string, string]>, have: Readonly<Record<string, string>>): boolean =>
  want.length === 0 || want.some(([k, v]) => have[k] !== undefined && (v.endsWith('*') ? have[k].startsWith(v.slice(0, -1)) : have[k] === v));

export function specMatches(spec: SelectionSpec, pod: SelectablePod, container: string): boolean {
  return (
    anyOf(spec.namespaces, pod.namespace) &&
    anyOf(spec.deployments, pod.deployment) &&
    anyOf(spec.pods, pod.name) &&
    anyOf(spec.containers, container) &&
    kvOf(spec.labels, pod.labels) &&
    kvOf(spec.annotations, pod.annotations)
  );
}

export function selected(include: readonly SelectionSpec[], exclude: readonly SelectionSpec[], pod: SelectablePod, container: string): boolean {
  if (include.length > 0 && !include.some((s) => specMatches(s, pod, container))) return false;
  return !exclude.some((s) => specMatches(s, pod, container));
}

/** The deployment a pod belongs to (`<deployment>-<hash>` of its ReplicaSet owner), or ''. */
export function deploymentOf(owners: ReadonlyArray<{ readonly kind?: string; readonly name?: string }> | undefined): string {
  const rs = owners?.find((o) => o.kind === 'ReplicaSet');
  if (!rs?.name) return '';
  const dash = rs.name.lastIndexOf('-');
  return dash > 0 ? rs.name.slice(0, dash) : rs.name;
}
