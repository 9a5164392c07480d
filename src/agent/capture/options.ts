/**
 * The options of `mesh-agent capture` (the flags the injector's `mesh-init` container passes,
 * src/inject/templates.ts `captureArgs`) checked and resolved into a plan: which ports and address
 * ranges are redirected to the proxy, per address family. Pure: no system calls. A bad value throws
 * CaptureOptionError naming the flag and the reason.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { PROXY_GID, PROXY_PORTS, PROXY_UID } from '../names.js';

/** The flags as given (strings as on the command line; empty string means "none"). */
export interface CaptureOptions {
  /** `-p`: port of the proxy's outbound listener. */
  readonly proxyPort?: string;
  /** `-z`: port of the proxy's inbound listener. */
  readonly inboundCapturePort?: string;
  /** `-u`: uid whose traffic is never captured (the proxy's). */
  readonly proxyUid?: string;
  /** `-g`: gid whose traffic is never captured. */
  readonly proxyGid?: string;
  /** `-m`: REDIRECT or NONE. */
  readonly mode?: string;
  /** `-i`: outbound destination ranges redirected (`*` for all, comma-separated CIDRs, or empty). */
  readonly includeOutboundIPRanges?: string;
  /** `-x`: outbound destination ranges never redirected. */
  readonly excludeOutboundIPRanges?: string;
  /** `-b`: inbound ports redirected (`*` for all, a list, or empty for none). */
  readonly includeInboundPorts?: string;
  /** `-d`: inbound ports never redirected (with `-b *`). */
  readonly excludeInboundPorts?: string;
  /** `-q`: outbound ports redirected whatever the destination. */
  readonly includeOutboundPorts?: string;
  /** `-o`: outbound ports never redirected. */
  readonly excludeOutboundPorts?: string;
  /** Also write IPv6 rules (ip6tables). */
  readonly ipv6?: boolean;
  /** `--redirect-dns`: the application's port-53 UDP and TCP go to the agent's DNS proxy (docs/adr/0187). */
  readonly redirectDns?: boolean;
}

export type Family = 'ipv4' | 'ipv6';

/** What is redirected, resolved. Ports are numbers, ranges CIDR strings of their family. */
export interface CapturePlan {
  readonly mode: 'REDIRECT' | 'NONE';
  readonly proxyPort: number;
  readonly inboundCapturePort: number;
  readonly proxyUid: number;
  readonly proxyGid: number;
  /** `all` (with `excludeInboundPorts`), a list of ports, or none (empty list). */
  readonly inbound: { readonly all: true; readonly exclude: ReadonlyArray<number> } | { readonly all: false; readonly include: ReadonlyArray<number> };
  readonly outbound: {
    readonly allRanges: boolean;
    readonly includeRanges: Readonly<Record<Family, ReadonlyArray<string>>>;
    readonly excludeRanges: Readonly<Record<Family, ReadonlyArray<string>>>;
    readonly includePorts: ReadonlyArray<number>;
    readonly excludePorts: ReadonlyArray<number>;
  };
  readonly families: ReadonlyArray<Family>;
  /** Where the application's DNS (port 53, UDP and TCP) is redirected: the agent's DNS proxy; none without --redirect-dns. */
  readonly dnsPort?: number;
  /** Things the user should know (e.g. IPv6 ranges given while only IPv4 is captured). */
  readonly warnings: ReadonlyArray<string>;
}

export class CaptureOptionError extends Error {
  override readonly name = 'CaptureOptionError';
  constructor(
    readonly flag: string,
    reason: string,
  ) {
    super(`${flag}: ${reason}`);
  }
}

function port(raw: string | undefined, flag: string, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new CaptureOptionError(flag, `${JSON.stringify(raw)} is not a port number`);
  const n = Number(raw.trim());
  if (n < 1 || n > 65535) throw new CaptureOptionError(flag, `${n} is not a port (1-65535)`);
  return n;
}

function id(raw: string | undefined, flag: string, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new CaptureOptionError(flag, `${JSON.stringify(raw)} is not a numeric id`);
  const n = Number(raw.trim());
  if (n > 4294967294) throw new CaptureOptionError(flag, `${n} is out of range`);
  return n;
}

function items(raw: string | undefined): string[] {
  return (raw ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** A list of ports (`*` allowed when `star`); returns 'all' for `*`. */
function ports(raw: string | undefined, flag: string, star: boolean): number[] | 'all' {
  const list = items(raw);
  if (list.includes('*')) {
    if (!star) throw new CaptureOptionError(flag, '`*` is not allowed here; list the ports');
    if (list.length > 1) throw new CaptureOptionError(flag, '`*` stands alone; it cannot be combined with ports');
    return 'all';
  }
  const out = new Set<number>();
  for (const p of list) out.add(port(p, flag, 0));
  return [...out].sort((a, b) => a - b);
}

/** A CIDR (or a bare address, taken as a host route) and its family. */
function cidr(raw: string, flag: string): { family: Family; cidr: string } {
  const [addr, bits, extra] = raw.split('/');
  if (extra !== undefined || addr === undefined) throw new CaptureOptionError(flag, `${JSON.stringify(raw)} is not a CIDR`);
  const family: Family | undefined = isIPv4(addr) ? 'ipv4' : isIPv6(addr) ? 'ipv6' : undefined;
  if (!family) throw new CaptureOptionError(flag, `${JSON.stringify(raw)}: ${JSON.stringify(addr)} is not an IP address`);
  const max = family === 'ipv4' ? 32 : 128;
  if (bits === undefined) return { family, cidr: `${addr}/${max}` };
  if (!/^\d+$/.test(bits) || Number(bits) > max) throw new CaptureOptionError(flag, `${JSON.stringify(raw)}: prefix length must be 0-${max}`);
  return { family, cidr: `${addr}/${Number(bits)}` };
}

function ranges(raw: string | undefined, flag: string, star: boolean): { all: boolean; byFamily: Record<Family, string[]> } {
  const list = items(raw);
  const byFamily: Record<Family, string[]> = { ipv4: [], ipv6: [] };
  if (list.includes('*')) {
    if (!star) throw new CaptureOptionError(flag, '`*` is not allowed here; list the ranges');
    if (list.length > 1) throw new CaptureOptionError(flag, '`*` stands alone; it cannot be combined with ranges');
    return { all: true, byFamily };
  }
  for (const r of list) {
    const c = cidr(r, flag);
    if (!byFamily[c.family].includes(c.cidr)) byFamily[c.family].push(c.cidr);
  }
  return { all: false, byFamily };
}

/** Checks `o` and resolves it into a plan; throws CaptureOptionError for a bad flag. */
export function capturePlan(o: CaptureOptions): CapturePlan {
  const mode = (o.mode ?? 'REDIRECT').trim();
  if (mode === 'TPROXY') throw new CaptureOptionError('--interception-mode', 'TPROXY is not supported by mesh-agent capture; use REDIRECT (or NONE for no capture)');
  if (mode !== 'REDIRECT' && mode !== 'NONE') throw new CaptureOptionError('--interception-mode', `${JSON.stringify(mode)} is not one of REDIRECT, NONE`);

  const proxyPort = port(o.proxyPort, '--proxy-port', PROXY_PORTS.outbound);
  const inboundCapturePort = port(o.inboundCapturePort, '--inbound-capture-port', PROXY_PORTS.inbound);
  if (proxyPort === inboundCapturePort) throw new CaptureOptionError('--inbound-capture-port', `${inboundCapturePort} is also the outbound proxy port`);
  const proxyUid = id(o.proxyUid, '--proxy-uid', PROXY_UID);
  const proxyGid = id(o.proxyGid, '--proxy-gid', PROXY_GID);

  const inInclude = ports(o.includeInboundPorts ?? '*', '--include-inbound-ports', true);
  const inExclude = ports(o.excludeInboundPorts, '--exclude-inbound-ports', false) as number[];
  const outInclude = ranges(o.includeOutboundIPRanges ?? '*', '--include-outbound-ip-ranges', true);
  const outExclude = ranges(o.excludeOutboundIPRanges, '--exclude-outbound-ip-ranges', false);
  const outIncludePorts = ports(o.includeOutboundPorts, '--include-outbound-ports', false) as number[];
  const outExcludePorts = ports(o.excludeOutboundPorts, '--exclude-outbound-ports', false) as number[];

  const families: Family[] = o.ipv6 ? ['ipv4', 'ipv6'] : ['ipv4'];
  const warnings: string[] = [];
  if (!o.ipv6 && outInclude.byFamily.ipv6.length > 0) {
    warnings.push(`--include-outbound-ip-ranges: ${outInclude.byFamily.ipv6.join(', ')} are IPv6 ranges, but IPv6 is not captured (--ipv6 is off): IPv6 traffic goes out directly`);
  }
  return {
    mode,
    proxyPort,
    inboundCapturePort,
    proxyUid,
    proxyGid,
    inbound: inInclude === 'all' ? { all: true, exclude: inExclude } : { all: false, include: inInclude },
    outbound: {
      allRanges: outInclude.all,
      includeRanges: outInclude.byFamily,
      excludeRanges: outExclude.byFamily,
      includePorts: outIncludePorts,
      excludePorts: outExcludePorts,
    },
    families,
    ...(o.redirectDns ? { dnsPort: PROXY_PORTS.dns } : {}),
    warnings,
  };
}
