/**
 * The telemetry addons the spec's dashboards open and `x metrics` queries, by role (spec part 1
 * names them `viz`, `topology`, `metrics`, `trace-a`, `trace-b`, `trace-c`). The mesh installs none
 * of them; an operator installs them beside it, in the mesh namespace by default, from the addon
 * manifests in common use, whose pod labels and ports are these (docs/adr/0123).
 */
import type { KubeClient } from '../../../kube/client.js';
import { CliError } from '../../runner.js';
import type { Pod } from './pods.js';

export interface Addon {
  /** The dashboard subcommand. */
  readonly role: string;
  /** What it is, for help and messages. */
  readonly description: string;
  /** Label selector of its pods. */
  readonly selector: string;
  /** The pod port of its web UI. */
  readonly port: number;
  /** The path the browser opens. */
  readonly path: string;
}

export const ADDONS: readonly Addon[] = [
  { role: 'viz', description: 'Visualization dashboard', selector: 'app.kubernetes.io/name=grafana', port: 3000, path: '/' },
  { role: 'topology', description: 'Topology dashboard', selector: 'app.kubernetes.io/name=kiali', port: 20001, path: '/kiali' },
  { role: 'metrics', description: 'Metrics store dashboard', selector: 'app.kubernetes.io/name=prometheus', port: 9090, path: '/' },
  { role: 'trace-a', description: 'Tracing dashboard', selector: 'app=jaeger', port: 16686, path: '/' },
  { role: 'trace-b', description: 'Tracing dashboard showing the mesh dashboard', selector: 'app=skywalking-ui', port: 8080, path: '/' },
  { role: 'trace-c', description: 'Tracing dashboard', selector: 'app=zipkin', port: 9411, path: '/' },
];

/** The addon of `role`; throws on an unknown role (a programming error). */
export function addon(role: string): Addon {
  const found = ADDONS.find((a) => a.role === role);
  if (!found) throw new Error(`unknown addon role ${role}`);
  return found;
}

/**
 * The pod serving `addon` in `namespace`: the first Running one its selector matches, else the first
 * one. A CliError naming the selector and namespace when there is none.
 */
export async function findAddonPod(kube: KubeClient, addonOf: Addon, namespace: string): Promise<{ namespace: string; name: string }> {
  const list = await kube.list<Pod>('v1', 'Pod', { namespace, labelSelector: addonOf.selector });
  const pod = list.items.find((p) => p.status?.phase === 'Running') ?? list.items[0];
  if (!pod?.metadata?.name) {
    throw new CliError(`no ${addonOf.role} addon in namespace ${namespace}: no pod matches ${addonOf.selector} (install the addon, or name its namespace with -n)`);
  }
  return { namespace, name: pod.metadata.name };
}
