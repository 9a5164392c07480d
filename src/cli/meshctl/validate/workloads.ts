/**
 * Checks of plain Kubernetes objects that the mesh reads, limited to what the mesh cares about:
 *
 * - Service ports: the protocol the mesh will use, by the daemon's own rule (`portProtocol` of
 *   the Kubernetes registry: UDP, else a known `appProtocol`, else the port name's prefix). A TCP
 *   port whose protocol cannot be told gets a warning (the proxy must sniff it), as does a port
 *   whose name and `appProtocol` disagree.
 * - Pods and pod templates (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob):
 *   a warning when the `app` or `version` label is missing (or its canonical
 *   `service.mesh.io/canonical-name` / `canonical-revision` counterpart): telemetry names
 *   services and versions by them, and subsets usually select on `version`.
 * - Shape errors only where the fields above cannot be read (a `ports` that is not a list,
 *   labels that are not a mapping of strings) and a missing `metadata.name`.
 *
 * Anything else about these objects is left to the Kubernetes API server.
 */
import { join } from '../../../config/validation/common.js';
import { parseProtocol } from '../../../model/service.js';
import { portProtocol } from '../../../registry/kube/convert.js';
import { isRecord } from '../../../util/record.js';
import type { Level } from './findings.js';

/** The kinds checked here, by `apiVersion`. */
export const WORKLOAD_KINDS: Readonly<Record<string, string>> = Object.freeze({
  Service: 'v1',
  Pod: 'v1',
  Deployment: 'apps/v1',
  StatefulSet: 'apps/v1',
  DaemonSet: 'apps/v1',
  ReplicaSet: 'apps/v1',
  Job: 'batch/v1',
  CronJob: 'batch/v1',
});

export interface WorkloadIssue {
  readonly level: Level;
  readonly path: string;
  readonly message: string;
}

const CANONICAL_NAME = 'service.mesh.io/canonical-name';
const CANONICAL_REVISION = 'service.mesh.io/canonical-revision';

type Rec = Record<string, unknown>;

/** The object at `path` of `root`, or undefined when a step is missing or not a mapping. */
function at(root: Rec, ...path: string[]): Rec | undefined {
  let cur: unknown = root;
  for (const p of path) {
    if (!isRecord(cur)) return undefined;
    cur = cur[p];
  }
  return isRecord(cur) ? cur : undefined;
}

/** Issues of a Kubernetes object of one of `WORKLOAD_KINDS` (its apiVersion already checked). */
export function checkWorkload(kind: string, doc: Rec): WorkloadIssue[] {
  const issues: WorkloadIssue[] = [];
  const name = at(doc, 'metadata')?.name;
  if (typeof name !== 'string' || name === '') issues.push({ level: 'Error', path: 'metadata.name', message: 'name is required' });
  switch (kind) {
    case 'Service':
      checkServicePorts(doc, issues);
      break;
    case 'Pod':
      checkPodLabels(doc.metadata, 'metadata', issues);
      break;
    case 'CronJob':
      checkPodLabels(at(doc, 'spec', 'jobTemplate', 'spec', 'template')?.metadata, 'spec.jobTemplate.spec.template.metadata', issues);
      break;
    default:
      checkPodLabels(at(doc, 'spec', 'template')?.metadata, 'spec.template.metadata', issues);
  }
  return issues;
}

function checkServicePorts(doc: Rec, issues: WorkloadIssue[]): void {
  const ports = at(doc, 'spec')?.ports;
  if (ports === undefined || ports === null) return;
  if (!Array.isArray(ports)) {
    issues.push({ level: 'Error', path: 'spec.ports', message: 'expected a list of ports' });
    return;
  }
  ports.forEach((port: unknown, i) => {
    const path = join('spec.ports', i);
    if (!isRecord(port)) {
      issues.push({ level: 'Error', path, message: 'expected a mapping (name, port, protocol, appProtocol)' });
      return;
    }
    const text = (key: string): string | undefined => (typeof port[key] === 'string' ? (port[key] as string) : undefined);
    const name = text('name');
    const appProtocol = text('appProtocol');
    const l4 = (text('protocol') ?? 'TCP').toUpperCase();
    if (l4 !== 'TCP') return; // UDP is UDP; SCTP is not proxied
    const protocol = portProtocol({ name, protocol: l4, appProtocol });
    const byName = parseProtocol(name);
    const label = `port ${typeof port.port === 'number' ? port.port : '?'}${name ? ` (${name})` : ''}`;
    if (protocol === 'UNSUPPORTED') {
      issues.push({
        level: 'Warning',
        path,
        message: `${label}: protocol is not declared, so the proxy has to detect it; name the port <protocol>[-<suffix>] (e.g. http-web, grpc, tcp-db) or set appProtocol`,
      });
      return;
    }
    if (appProtocol !== undefined) {
      const byAppProtocol = portProtocol({ protocol: 'TCP', appProtocol });
      if (byAppProtocol === 'UNSUPPORTED') {
        issues.push({ level: 'Warning', path: join(path, 'appProtocol'), message: `${label}: appProtocol ${JSON.stringify(appProtocol)} is not a protocol the mesh knows; the name's protocol ${protocol} is used` });
      } else if (byName !== 'UNSUPPORTED' && byName !== protocol) {
        issues.push({ level: 'Warning', path: join(path, 'name'), message: `${label}: the name says ${byName} but appProtocol says ${protocol}; appProtocol wins` });
      }
    }
  });
}

function checkPodLabels(metadata: unknown, path: string, issues: WorkloadIssue[]): void {
  const labels = isRecord(metadata) ? metadata.labels : undefined;
  if (labels !== undefined && labels !== null && !isRecord(labels)) {
    issues.push({ level: 'Error', path: join(path, 'labels'), message: 'expected a mapping of strings' });
    return;
  }
  const has = (key: string): boolean => isRecord(labels) && typeof labels[key] === 'string' && labels[key] !== '';
  const where = join(path, 'labels');
  if (!has('app') && !has(CANONICAL_NAME)) {
    issues.push({ level: 'Warning', path: where, message: `no "app" label (or ${CANONICAL_NAME}): telemetry cannot name the workload's service` });
  }
  if (!has('version') && !has(CANONICAL_REVISION)) {
    issues.push({ level: 'Warning', path: where, message: `no "version" label (or ${CANONICAL_REVISION}): telemetry cannot tell versions apart, and subsets usually select on it` });
  }
}
