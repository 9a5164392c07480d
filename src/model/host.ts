/** Hostname resolution and matching rules shared by routing rules, destination rules and scoping. */

/** Resolves a short host (`reviews`) written in namespace `ns` to its FQDN; FQDNs and wildcards stay. */
export function resolveHost(host: string, namespace: string, domain: string): string {
  if (host === '*' || host.startsWith('*.')) return host;
  if (host.includes('.')) return host;
  return `${host}.${namespace}.svc.${domain}`;
}

/** True when `pattern` (exact or `*.suffix` or `*`) matches the concrete or wildcard `host`. */
export function hostMatches(pattern: string, host: string): boolean {
  if (pattern === '*' || pattern === host) return true;
  if (pattern.startsWith('*')) {
    const suffix = pattern.slice(1); // ".example.com"
    if (host.startsWith('*')) return host.slice(1).endsWith(suffix);
    return host.endsWith(suffix);
  }
  return false;
}

/** Higher is more specific: exact hosts beat wildcards; longer wildcard suffixes beat shorter ones. */
export function hostSpecificity(pattern: string): number {
  if (!pattern.startsWith('*')) return 1_000_000;
  return pattern.length;
}

/**
 * exportTo visibility: `*` everywhere, `.` the owner's namespace, `~` nowhere, otherwise namespace names.
 */
export function visibleTo(exportTo: ReadonlyArray<string>, ownerNamespace: string, viewerNamespace: string): boolean {
  for (const e of exportTo) {
    if (e === '*') return true;
    if (e === '~') continue;
    if (e === '.' ? viewerNamespace === ownerNamespace : e === viewerNamespace) return true;
  }
  return false;
}
