/**
 * The capture rules as data: a plan (./options.ts) becomes one `iptables-restore --noflush` input per
 * address family, in the nat table. Pure; table-tested in test/agent/capture-rules.test.ts and
 * proved in a network namespace by test/agent/capture-netns.test.ts.
 *
 *   PREROUTING -p tcp -> MESH_INBOUND     inbound TCP: excluded ports RETURN, the rest (or the listed
 *                                         ports) -> MESH_IN_REDIRECT -> REDIRECT to the inbound port
 *   OUTPUT -p tcp -> MESH_OUTPUT          outbound TCP, in this order:
 *     excluded outbound ports                          RETURN
 *     from the inbound passthrough source over lo      RETURN (the proxy reaching the app)
 *     the proxy (uid, then gid) over lo to a non-loopback address  -> MESH_INBOUND (the pod calling
 *                                         itself through its proxy is inbound traffic)
 *     others over lo                                   RETURN (the app calling itself)
 *     the proxy's uid / gid                            RETURN (the proxy's own traffic is never captured)
 *     to loopback                                      RETURN
 *     included outbound ports                          -> MESH_REDIRECT, whatever the destination
 *     excluded ranges                                  RETURN
 *     included ranges (or all)                         -> MESH_REDIRECT -> REDIRECT to the proxy port
 *   OUTPUT -p udp|tcp --dport 53 -> MESH_DNS  with --redirect-dns (docs/adr/0187), before MESH_OUTPUT:
 *     the proxy's uid / gid                            RETURN (the agent forwarding upstream)
 *     the rest                                         REDIRECT to the agent's DNS proxy (15053)
 *
 * The chains are declared in the input, which empties them, and a rerun's restore first deletes the
 * jumps an earlier run added (`withPreviousRemoved`), so running it twice leaves one set of rules.
 */
import type { CapturePlan, Family } from './options.js';

export const CHAINS = Object.freeze({
  inbound: 'MESH_INBOUND',
  inRedirect: 'MESH_IN_REDIRECT',
  output: 'MESH_OUTPUT',
  redirect: 'MESH_REDIRECT',
  dns: 'MESH_DNS',
});

/** Per family: loopback and the source address the proxy's inbound passthrough connects from. */
const ADDRESSES: Readonly<Record<Family, { loopback: string; passthroughSource: string }>> = {
  ipv4: { loopback: '127.0.0.1/32', passthroughSource: '127.0.0.6/32' },
  ipv6: { loopback: '::1/128', passthroughSource: '::6/128' },
};

export interface Ruleset {
  readonly family: Family;
  /** The program that takes `text` on standard input (with `--noflush`). */
  readonly restoreCommand: 'iptables-restore' | 'ip6tables-restore';
  /** The program whose output `withPreviousRemoved` reads (`-t nat`). */
  readonly saveCommand: 'iptables-save' | 'ip6tables-save';
  /** The restore input: `*nat` … `COMMIT`. */
  readonly text: string;
  /** The rules it adds to built-in chains (`PREROUTING -p tcp -j MESH_INBOUND`). */
  readonly jumps: ReadonlyArray<string>;
}

function inboundCaptures(plan: CapturePlan): boolean {
  return plan.inbound.all || plan.inbound.include.length > 0;
}

function rulesetFor(plan: CapturePlan, family: Family): Ruleset {
  const { loopback, passthroughSource } = ADDRESSES[family];
  const { inbound, inRedirect, output, redirect } = CHAINS;
  const rules: string[] = [];
  const jumps: string[] = [];
  const add = (rule: string): void => {
    rules.push(`-A ${rule}`);
  };

  add(`${inRedirect} -p tcp -j REDIRECT --to-ports ${plan.inboundCapturePort}`);
  add(`${redirect} -p tcp -j REDIRECT --to-ports ${plan.proxyPort}`);

  if (plan.inbound.all) {
    for (const p of plan.inbound.exclude) add(`${inbound} -p tcp --dport ${p} -j RETURN`);
    add(`${inbound} -p tcp -j ${inRedirect}`);
  } else {
    for (const p of plan.inbound.include) add(`${inbound} -p tcp --dport ${p} -j ${inRedirect}`);
  }
  if (inboundCaptures(plan)) jumps.push(`PREROUTING -p tcp -j ${inbound}`);
  if (plan.dnsPort !== undefined) {
    for (const proto of ['udp', 'tcp']) jumps.push(`OUTPUT -p ${proto} --dport 53 -j ${CHAINS.dns}`);
    add(`${CHAINS.dns} -m owner --uid-owner ${plan.proxyUid} -j RETURN`);
    add(`${CHAINS.dns} -m owner --gid-owner ${plan.proxyGid} -j RETURN`);
    for (const proto of ['udp', 'tcp']) add(`${CHAINS.dns} -p ${proto} -j REDIRECT --to-ports ${plan.dnsPort}`);
  }
  jumps.push(`OUTPUT -p tcp -j ${output}`);

  const o = plan.outbound;
  for (const p of o.excludePorts) add(`${output} -p tcp --dport ${p} -j RETURN`);
  add(`${output} -s ${passthroughSource} -o lo -j RETURN`);
  for (const [match, owner] of [['--uid-owner', plan.proxyUid], ['--gid-owner', plan.proxyGid]] as const) {
    if (inboundCaptures(plan)) add(`${output} ! -d ${loopback} -o lo -m owner ${match} ${owner} -j ${inbound}`);
    add(`${output} -o lo -m owner ! ${match} ${owner} -j RETURN`);
    add(`${output} -m owner ${match} ${owner} -j RETURN`);
  }
  add(`${output} -d ${loopback} -j RETURN`);
  for (const p of o.includePorts) add(`${output} -p tcp --dport ${p} -j ${redirect}`);
  for (const c of o.excludeRanges[family]) add(`${output} -d ${c} -j RETURN`);
  if (o.allRanges) add(`${output} -j ${redirect}`);
  else for (const c of o.includeRanges[family]) add(`${output} -d ${c} -j ${redirect}`);

  const text = [
    '*nat',
    ...Object.values(CHAINS)
      .filter((c) => c !== CHAINS.dns || plan.dnsPort !== undefined)
      .map((c) => `:${c} - [0:0]`),
    ...jumps.map((j) => `-A ${j}`),
    ...rules,
    'COMMIT',
    '',
  ].join('\n');
  return {
    family,
    restoreCommand: family === 'ipv4' ? 'iptables-restore' : 'ip6tables-restore',
    saveCommand: family === 'ipv4' ? 'iptables-save' : 'ip6tables-save',
    text,
    jumps,
  };
}

/** The restore inputs of `plan`, one per family it captures; none for interception mode NONE. */
export function captureRulesets(plan: CapturePlan): Ruleset[] {
  if (plan.mode === 'NONE') return [];
  return plan.families.map((f) => rulesetFor(plan, f));
}

const OUR_JUMP = new RegExp(`^-A ((?:PREROUTING|OUTPUT) .*-j (?:${Object.values(CHAINS).join('|')}))\\s*$`);

/**
 * `ruleset.text` with `-D` lines for the jumps into the capture chains that `saved` (the output of
 * `iptables-save -t nat`) shows in built-in chains, so that a rerun replaces the rules instead of
 * adding a second set.
 */
export function withPreviousRemoved(ruleset: Ruleset, saved: string): string {
  const previous = saved
    .split('\n')
    .map((line) => OUR_JUMP.exec(line.trim())?.[1])
    .filter((j): j is string => j !== undefined);
  if (previous.length === 0) return ruleset.text;
  const lines = ruleset.text.split('\n');
  const firstRule = lines.findIndex((l) => l.startsWith('-A '));
  return [...lines.slice(0, firstRule), ...previous.map((j) => `-D ${j}`), ...lines.slice(firstRule)].join('\n');
}
