/**
 * The proxy container the injector renders, as the kubelet would start it: downward-API variables
 * resolved from the pod's facts, `$(VAR)` in arguments expanded, and the arguments of
 * `mesh-agent proxy <type> ...` split into the flags the agent's command receives.
 */
import type { Container } from '../../src/inject/pod.js';
import type { ProxyFlags } from '../../src/agent/settings.js';

export interface PodFacts {
  readonly name: string;
  readonly namespace: string;
  readonly podIP: string;
  readonly serviceAccount: string;
  readonly hostIP?: string;
  readonly nodeName?: string;
}

/** The container's environment with fieldRefs resolved. */
export function kubeletEnv(c: Container, pod: PodFacts): Record<string, string> {
  const fields: Record<string, string> = {
    'metadata.name': pod.name,
    'metadata.namespace': pod.namespace,
    'status.podIP': pod.podIP,
    'spec.serviceAccountName': pod.serviceAccount,
    'status.hostIP': pod.hostIP ?? '192.0.2.10',
    'spec.nodeName': pod.nodeName ?? 'node-1',
  };
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    const ref = (e.valueFrom as { fieldRef?: { fieldPath: string } } | undefined)?.fieldRef?.fieldPath;
    if (ref !== undefined) {
      const v = fields[ref];
      if (v === undefined) throw new Error(`test: no value for fieldRef ${ref}`);
      env[e.name] = v;
    } else env[e.name] = e.value ?? '';
  }
  return env;
}

/** The container's arguments with `$(VAR)` expanded from `env`, as the kubelet does. */
export function kubeletArgs(c: Container, env: Readonly<Record<string, string>>): string[] {
  return (c.args ?? []).map((a) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, n: string) => env[n] ?? m));
}

/** `proxy <type> --a=b --c d ...` → the type and the flags. */
export function proxyFlags(args: ReadonlyArray<string>): { type: string; flags: ProxyFlags } {
  if (args[0] !== 'proxy') throw new Error(`test: not a proxy command: ${args.join(' ')}`);
  const flags: Record<string, string> = {};
  for (let i = 2; i < args.length; i++) {
    const a = args[i] as string;
    if (!a.startsWith('--')) throw new Error(`test: unexpected argument ${a}`);
    const eq = a.indexOf('=');
    if (eq > 0) flags[a.slice(2, eq)] = a.slice(eq + 1);
    else flags[a.slice(2)] = args[++i] as string;
  }
  return { type: args[1] as string, flags: flags as ProxyFlags };
}
