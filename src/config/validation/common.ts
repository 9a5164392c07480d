/**
 * Building blocks of the semantic checks: an issue collector, field-path formatting and checks
 * shared by several kinds (host names, exportTo, ports, percentages, regular expressions).
 */
import { isIP } from 'node:net';
import { durationMs } from '../../util/config-duration.js';

/**
 * One problem in a document: the field (`spec.http[0].route[1].weight`) and what is wrong. An
 * issue is an error (the document is refused) unless `level` is `warning`: the document is used,
 * and the warning is shown by `meshctl validate`, logged by the daemon and returned by the
 * validating webhook.
 */
export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
  readonly level?: 'warning';
}

export function isWarning(issue: ConfigIssue): boolean {
  return issue.level === 'warning';
}

/** What the rules may know of the object besides its spec. */
export interface ValidationContext {
  readonly namespace: string;
  readonly name: string;
  readonly annotations: Readonly<Record<string, string>>;
}

/** Collects issues while a spec is walked. */
export class Issues {
  readonly list: ConfigIssue[] = [];

  add(path: string, message: string): void {
    this.list.push({ path, message });
  }

  warn(path: string, message: string): void {
    this.list.push({ path, message, level: 'warning' });
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Appends segments to a field path: numbers as `[i]`, names as `.name`, other keys as `["x-key"]`. */
export function join(base: string, ...segments: ReadonlyArray<string | number>): string {
  let out = base;
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (IDENTIFIER.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_LABEL_ANY_CASE = /^[A-Za-z0-9]([-A-Za-z0-9_]*[A-Za-z0-9])?$/;

/** A lower-case DNS-1123 label: at most 63 characters of a-z, 0-9 and `-`, alphanumeric at both ends. */
export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

/** A lower-case DNS-1123 subdomain: dot-separated labels, at most 253 characters. */
export function isDns1123Subdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split('.').every((l) => isDns1123Label(l));
}

export interface HostRules {
  /** `*` and `*.suffix` forms. */
  readonly wildcard: boolean;
  /** Plain IP addresses. */
  readonly ip: boolean;
}

/** Why `host` is not a valid host name under `rules`, or undefined when it is. */
export function hostProblem(host: string, rules: HostRules): string | undefined {
  if (host === '') return 'host must not be empty';
  if (isIP(host)) return rules.ip ? undefined : 'an IP address is not allowed here, use a host name';
  if (host === '*') return rules.wildcard ? undefined : 'wildcard host "*" is not allowed here';
  if (host.length > 253) return `host "${host}" is longer than 253 characters`;
  const labels = host.split('.');
  if (host.endsWith('.')) labels.pop();
  for (const [i, label] of labels.entries()) {
    // A wildcard is a prefix of the first label: `*.example.com`, or partial as `*foo.example.com`.
    if (i === 0 && label.startsWith('*')) {
      if (!rules.wildcard) return `wildcard host "${host}" is not allowed here`;
      const rest = label.slice(1).replace(/^-/, '');
      if (rest === '' || (rest.length <= 62 && DNS_LABEL_ANY_CASE.test(rest))) continue;
    }
    if (label.includes('*')) return `host "${host}": a wildcard is only allowed at the start of the first label ("*.example.com")`;
    if (label.length > 63 || !DNS_LABEL_ANY_CASE.test(label)) {
      return `host "${host}" is not a valid DNS name (label "${label}")`;
    }
  }
  return undefined;
}

export function checkHost(issues: Issues, path: string, host: string, rules: HostRules): void {
  const problem = hostProblem(host, rules);
  if (problem) issues.add(path, problem);
}

/** `exportTo`: `.`, `*`, `~` or namespace names; `*` and `~` stand alone. */
export function checkExportTo(issues: Issues, path: string, exportTo: ReadonlyArray<string> | undefined): void {
  if (!exportTo) return;
  const seen = new Set<string>();
  exportTo.forEach((entry, i) => {
    const p = join(path, i);
    if (seen.has(entry)) issues.add(p, `duplicate entry "${entry}"`);
    seen.add(entry);
    if (entry !== '.' && entry !== '*' && entry !== '~' && !isDns1123Label(entry)) {
      issues.add(p, `"${entry}" is neither ".", "*", "~" nor a namespace name`);
    }
  });
  if (exportTo.length > 1 && (seen.has('*') || seen.has('~'))) {
    issues.add(path, `"*" and "~" cannot be combined with other entries`);
  }
}

export function checkPortNumber(issues: Issues, path: string, port: number | undefined): void {
  if (port !== undefined && (port < 1 || port > 65535)) issues.add(path, `port ${port} is outside 1..65535`);
}

export function checkPercent(issues: Issues, path: string, value: number | undefined): void {
  if (value !== undefined && !(value >= 0 && value <= 100)) issues.add(path, `percentage ${value} is outside 0..100`);
}

export function checkNonNegative(issues: Issues, path: string, value: number | undefined): void {
  if (value !== undefined && value < 0) issues.add(path, `must not be negative (got ${value})`);
}

/**
 * A duration of at least `minMs` milliseconds, in whole milliseconds: the proxy keeps no finer
 * precision (the schema already checked the syntax).
 */
export function checkMinDuration(issues: Issues, path: string, value: string | undefined, minMs: number): void {
  if (value === undefined) return;
  const ms = durationMs(value);
  if (ms < minMs) issues.add(path, `duration ${value} is shorter than the minimum of ${minMs} ms`);
  else if (!Number.isInteger(Math.round(ms * 1e6) / 1e6)) issues.add(path, `duration ${value} is finer than a millisecond, the finest precision supported`);
}

/** A list of strings in which no entry may be empty (an empty entry matches nothing, or everything). */
export function checkNoEmpty(issues: Issues, path: string, values: ReadonlyArray<string> | undefined): void {
  (values ?? []).forEach((v, i) => {
    if (v === '') issues.add(join(path, i), 'empty value is not allowed');
  });
}

const UNSUPPORTED_REGEX = /\(\?<?[=!]|\\[1-9]/;

/** The proxy evaluates RE2 expressions: reject what does not compile and JavaScript-only constructs. */
export function checkRegex(issues: Issues, path: string, pattern: string | undefined): void {
  if (pattern === undefined) return;
  if (UNSUPPORTED_REGEX.test(pattern)) {
    issues.add(path, `regex "${pattern}" uses lookaround or a back-reference, which RE2 does not support`);
    return;
  }
  try {
    new RegExp(pattern);
  } catch (err) {
    issues.add(path, `regex "${pattern}" does not compile: ${(err as Error).message}`);
  }
}

/** An IP address or CIDR block. */
export function isIpOrCidr(s: string): boolean {
  const slash = s.indexOf('/');
  if (slash < 0) return isIP(s) !== 0;
  const family = isIP(s.slice(0, slash));
  const bits = s.slice(slash + 1);
  if (family === 0 || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

export function isCidr(s: string): boolean {
  return s.includes('/') && isIpOrCidr(s);
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Kubernetes label syntax: key `[prefix/]name` (name ≤ 63, prefix a DNS subdomain), value ≤ 63 characters. */
export function checkLabels(issues: Issues, path: string, labels: Readonly<Record<string, string>> | undefined): void {
  if (!labels) return;
  for (const [key, value] of Object.entries(labels)) {
    const p = join(path, key);
    const slash = key.lastIndexOf('/');
    const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
    const name = slash >= 0 ? key.slice(slash + 1) : key;
    if (prefix !== undefined && !isDns1123Subdomain(prefix)) issues.add(p, `label key prefix "${prefix}" is not a DNS subdomain`);
    if (name.length > 63 || !LABEL_NAME.test(name)) issues.add(p, `label key "${key}" is not a valid label name`);
    if (value !== '' && (value.length > 63 || !LABEL_NAME.test(value))) issues.add(p, `label value "${value}" is not a valid label value`);
  }
}

/** Protocol names of ports (compared case-insensitively). */
export const PORT_PROTOCOLS: ReadonlySet<string> = new Set([
  'HTTP',
  'HTTPS',
  'GRPC',
  'GRPC-WEB',
  'HTTP2',
  'HTTP_PROXY',
  'MONGO',
  'MYSQL',
  'REDIS',
  'TCP',
  'TLS',
  'UDP',
]);

export function checkProtocol(issues: Issues, path: string, protocol: string | undefined): void {
  if (protocol !== undefined && protocol !== '' && !PORT_PROTOCOLS.has(protocol.toUpperCase())) {
    issues.add(path, `unknown protocol "${protocol}" (known: ${[...PORT_PROTOCOLS].join(', ')})`);
  }
}

/** A selector or target-reference pair that must not both be set. */
export function checkSelectorXorTargets(
  issues: Issues,
  path: string,
  spec: { readonly selector?: unknown; readonly targetRef?: unknown; readonly targetRefs?: ReadonlyArray<unknown> },
): void {
  const hasTargets = spec.targetRef !== undefined || (spec.targetRefs?.length ?? 0) > 0;
  if (spec.selector !== undefined && hasTargets) {
    issues.add(join(path, 'selector'), 'selector and targetRef/targetRefs are mutually exclusive');
  }
  if (spec.targetRef !== undefined && (spec.targetRefs?.length ?? 0) > 0) {
    issues.add(join(path, 'targetRefs'), 'targetRef and targetRefs are mutually exclusive');
  }
}

/** The kinds a policy may target, by kind: the API group each needs. */
const TARGET_GROUPS: Readonly<Record<string, string>> = {
  Gateway: 'gateway.networking.k8s.io',
  GatewayClass: 'gateway.networking.k8s.io',
  Service: '',
  ServiceEntry: 'networking.mesh.io',
};

interface TargetRef {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}

/**
 * `targetRef`/`targetRefs` of a policy: a known kind with its group (`""` or `core` for a
 * Service), a name, and no namespace other than the policy's own (cross-namespace references are
 * not supported). `kinds` narrows the kinds the policy may target.
 */
export function checkTargetRefs(
  issues: Issues,
  path: string,
  spec: { readonly targetRef?: TargetRef; readonly targetRefs?: ReadonlyArray<TargetRef> },
  ctx: ValidationContext | undefined,
  kinds: ReadonlyArray<string> = Object.keys(TARGET_GROUPS),
): void {
  const check = (p: string, ref: TargetRef): void => {
    const kind = ref.kind ?? '';
    const group = ref.group ?? '';
    if (!kinds.includes(kind)) issues.add(join(p, 'kind'), `kind "${kind}" cannot be targeted here (allowed: ${kinds.join(', ')})`);
    else {
      const want = TARGET_GROUPS[kind];
      const ok = want === '' ? group === '' || group === 'core' : group === want;
      if (!ok) issues.add(join(p, 'group'), `kind ${kind} needs group "${want}"${want === '' ? ' (or "core")' : ''}, got "${group}"`);
    }
    if (!ref.name) issues.add(join(p, 'name'), 'the name of the target is required');
    if (ref.namespace && ctx && ref.namespace !== ctx.namespace) {
      issues.add(join(p, 'namespace'), `namespace "${ref.namespace}" is not the policy's own (${ctx.namespace}): cross-namespace references are not supported`);
    }
  };
  if (spec.targetRef) check(join(path, 'targetRef'), spec.targetRef);
  (spec.targetRefs ?? []).forEach((r, i) => check(join(path, 'targetRefs', i), r));
}

/** Duplicates in a list, reported on the second occurrence. */
export function checkUnique<T>(issues: Issues, path: string, items: ReadonlyArray<T> | undefined, key: (item: T) => string | undefined, what: string): void {
  if (!items) return;
  const seen = new Map<string, number>();
  items.forEach((item, i) => {
    const k = key(item);
    if (k === undefined) return;
    const first = seen.get(k);
    if (first !== undefined) issues.add(join(path, i), `duplicate ${what} "${k}" (also at index ${first})`);
    else seen.set(k, i);
  });
}
