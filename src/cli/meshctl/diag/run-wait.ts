/**
 * `meshctl x wait`: waits until a config object's generation is held by the proxies that need it,
 * as the daemons track it (the `distributionz` view of every meshd over the xDS debug channel):
 * done when, over all daemons, proxies up to date / proxies >= `--threshold` (no proxy at all
 * counts as done once a daemon holds the generation). `--for delete` waits until no daemon holds
 * the object. Polls every half second until `--timeout`, then fails naming what it saw last.
 */
import { CONFIG_KINDS } from '../../../config/kinds.js';
import type { KubeClient } from '../../../kube/client.js';
import type { KubeObject } from '../../../kube/types.js';
import { CliError, type CommandOutcome } from '../../runner.js';
import { queryDebug, resolveTargets, type XdsConnectFlags, type XdsTarget } from './xds-client.js';

const POLL_MS = 500;

/** Short names operators type for the config kinds (as kubectl's short names). */
const SHORT: Readonly<Record<string, string>> = { vs: 'VirtualService', dr: 'DestinationRule', gw: 'Gateway', se: 'ServiceEntry', we: 'WorkloadEntry', wg: 'WorkloadGroup', pa: 'PeerAuthentication', ap: 'AuthorizationPolicy', ra: 'RequestAuthentication' };

export interface ConfigKindRef {
  readonly kind: string;
  readonly apiVersion: string;
}

/** The config kind of `type` (`VirtualService`, `virtualservices`, `vs` …); a CliError listing the kinds otherwise. */
export function configKindOf(type: string): ConfigKindRef {
  const t = type.toLowerCase();
  const kind = SHORT[t] ?? CONFIG_KINDS.find((k) => [k.kind.toLowerCase(), `${k.kind.toLowerCase()}s`, k.kind.toLowerCase().replace(/y$/, 'ies')].includes(t))?.kind;
  const def = CONFIG_KINDS.find((k) => k.kind === kind);
  if (!def) throw new CliError(`unknown type ${JSON.stringify(type)}: one of ${CONFIG_KINDS.map((k) => k.kind).join(', ')} (or ${Object.keys(SHORT).join(', ')})`);
  return { kind: def.kind, apiVersion: `${def.gvk.group}/${def.gvk.version}` };
}

export interface WaitInput {
  readonly kind: ConfigKindRef;
  readonly name: string;
  readonly namespace: string;
  readonly for: 'distribution' | 'delete';
  /** `--generation`; absent: the object's current generation from the API server. */
  readonly generation?: number;
  readonly threshold: number;
  readonly timeoutMs: number;
  /** Where progress lines go (standard error), when verbose. */
  readonly progress?: (line: string) => void;
}

interface Distribution {
  readonly controlPlane: string;
  readonly proxies: number;
  readonly generation: number | null;
  readonly upToDate: number;
}

interface Seen {
  readonly proxies: number;
  readonly upToDate: number;
  readonly holding: number;
  readonly answered: number;
  readonly errors: string[];
}

async function look(flags: XdsConnectFlags, targets: readonly XdsTarget[], ref: string, generation: number, client?: () => Promise<KubeClient>): Promise<Seen> {
  const results = await queryDebug<Distribution>(flags, targets, 'distributionz', { ref }, client);
  let proxies = 0;
  let upToDate = 0;
  let holding = 0;
  const errors: string[] = [];
  for (const r of results) {
    if (!r.body) {
      errors.push(`meshd ${r.target.name}: ${r.error}`);
      continue;
    }
    proxies += r.body.proxies;
    if (r.body.generation !== null) holding++;
    if (r.body.generation !== null && r.body.generation >= generation) upToDate += Math.min(r.body.upToDate, r.body.proxies);
  }
  return { proxies, upToDate, holding, answered: results.length - errors.length, errors };
}

export async function runWait(flags: XdsConnectFlags, client: (() => Promise<KubeClient>) | undefined, input: WaitInput): Promise<CommandOutcome> {
  const ref = `${input.kind.kind}/${input.namespace}/${input.name}`;
  const started = Date.now();
  let generation = input.generation;
  if (input.for === 'distribution' && generation === undefined) {
    if (!client) throw new CliError('the current generation is read from the cluster: give --generation to wait without one');
    const obj = await (await client()).find<KubeObject>({ apiVersion: input.kind.apiVersion, kind: input.kind.kind, namespace: input.namespace, name: input.name });
    if (!obj) throw new CliError(`${input.kind.kind} ${input.namespace}/${input.name} not found`);
    generation = obj.metadata?.generation ?? 1;
  }
  const targets = await resolveTargets(flags, client);
  let seen: Seen | undefined;
  for (;;) {
    seen = await look(flags, targets, ref, generation ?? 0, client);
    if (seen.answered === 0) throw new CliError(seen.errors.join('; '));
    if (input.for === 'delete') {
      if (seen.holding === 0) return { stdout: `${ref} deleted from ${seen.answered} meshd\n` };
    } else {
      const done = seen.proxies === 0 ? seen.holding > 0 : seen.upToDate / seen.proxies >= input.threshold;
      if (done) return { stdout: `${ref} generation ${generation} distributed to ${seen.upToDate}/${seen.proxies} proxies\n` };
    }
    input.progress?.(`${ref}: ${seen.upToDate}/${seen.proxies} proxies up to date\n`);
    const left = input.timeoutMs - (Date.now() - started);
    if (left <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, left)));
  }
  const why =
    input.for === 'delete'
      ? `${seen.holding} meshd still hold it`
      : `${seen.upToDate}/${seen.proxies} proxies hold generation ${generation} (threshold ${input.threshold})${seen.holding < seen.answered ? `; ${seen.answered - seen.holding} of ${seen.answered} meshd do not know the object` : ''}`;
  throw new CliError(`timed out after ${input.timeoutMs / 1000}s waiting for ${ref} (${input.for}): ${why}${seen.errors.length ? `; ${seen.errors.join('; ')}` : ''}`);
}
