/**
 * `meshctl validate --referential`: checks that what the given files refer to is defined in the
 * given files, resolving hosts and subsets with the daemon's own model (the config store and
 * `PushContext.destinationRule`, as a client in the VirtualService's namespace would see them):
 *
 * - every route, mirror and mirrors destination of a VirtualService that names a subset finds a
 *   DestinationRule for its host that defines that subset;
 * - every gateway a VirtualService (or one of its matches) binds to, other than `mesh`, is a
 *   Gateway of the files;
 * - every delegate a route points to is a VirtualService of the files without hosts;
 * - no object is defined by two files (the daemon keeps the first file's copy).
 *
 * References to objects that live only in a cluster are reported too: the check is about the
 * files as a self-contained set.
 */
import { MemoryConfigStore } from '../../../config/store.js';
import type { ConfigObject } from '../../../config/types.js';
import { join } from '../../../config/validation/common.js';
import type { DestinationRule, ServiceEntry, VirtualService } from '../../../config/spec-types.js';
import { resolveHost } from '../../../model/host.js';
import { DEFAULT_MESH_SETTINGS } from '../../../model/mesh-settings.js';
import { PushContext } from '../../../model/push-context.js';
import { splitOrigin, type Finding } from './findings.js';

export interface ReferenceOptions {
  /** The mesh root namespace (mesh-wide DestinationRules); `--meshNamespace`. */
  readonly rootNamespace: string;
  readonly domain?: string;
}

interface Destination {
  readonly host: string;
  readonly subset?: string;
}

export function checkReferences(objects: readonly ConfigObject[], options: ReferenceOptions): Finding[] {
  const findings: Finding[] = [];
  const report = (o: ConfigObject, path: string, message: string): void => {
    findings.push({ level: 'Error', ...splitOrigin(o.meta.origin ?? ''), kind: o.meta.gvk.kind, namespace: o.meta.namespace, name: o.meta.name, path, message });
  };

  const store = new MemoryConfigStore();
  const byFile = new Map<string, ConfigObject[]>();
  for (const o of objects) {
    const { file } = splitOrigin(o.meta.origin ?? '');
    const list = byFile.get(file);
    if (list) list.push(o);
    else byFile.set(file, [o]);
  }
  for (const [file, list] of byFile) {
    for (const r of store.applySource(file, list).rejections) {
      const { file: f, index } = splitOrigin(r.origin);
      for (const issue of r.issues) findings.push({ level: 'Error', file: f, index, kind: r.kind, namespace: r.namespace, name: r.name, path: issue.path, message: issue.message });
    }
  }

  const mesh = { ...DEFAULT_MESH_SETTINGS, rootNamespace: options.rootNamespace, domain: options.domain ?? DEFAULT_MESH_SETTINGS.domain };
  const ctx = PushContext.build({ version: 'validate', configs: store, services: [], mesh });
  const entries = store.list<ServiceEntry>('ServiceEntry');
  const namespaceOfHost = (host: string, fallback: string): string => {
    const m = host.match(/^[^.]+\.([^.]+)\.svc\./);
    if (m) return m[1];
    return entries.find((e) => (e.spec.hosts ?? []).includes(host))?.meta.namespace ?? fallback;
  };

  for (const vs of store.list<VirtualService>('VirtualService')) {
    const ns = vs.meta.namespace;
    const spec = vs.spec;

    const checkGateway = (g: string, path: string): void => {
      if (g === 'mesh') return;
      const [gns, gname] = g.includes('/') ? g.split('/', 2) : [ns, g];
      if (!store.get('Gateway', gns, gname)) report(vs, path, `gateway "${gns}/${gname}" is not defined in the given files`);
    };
    const checkSubset = (dest: Destination | undefined, path: string): void => {
      if (!dest?.subset) return;
      const host = resolveHost(dest.host, ns, mesh.domain);
      const dr = ctx.destinationRule({ namespace: ns, labels: {} }, { hostname: host, namespace: namespaceOfHost(host, ns) });
      if (!dr) {
        report(vs, join(path, 'subset'), `subset "${dest.subset}" of host ${host}: no DestinationRule for this host in the given files`);
        return;
      }
      const subsets = ((dr.spec as DestinationRule).subsets ?? []).map((s) => s.name);
      if (!subsets.includes(dest.subset)) {
        const rule = `${dr.source.meta.namespace}/${dr.source.meta.name}`;
        report(vs, join(path, 'subset'), `subset "${dest.subset}" of host ${host} is not defined by DestinationRule ${rule} (its subsets: ${subsets.join(', ') || 'none'})`);
      }
    };

    (spec.gateways ?? []).forEach((g, i) => checkGateway(g, join('spec.gateways', i)));
    (spec.http ?? []).forEach((r, i) => {
      const path = join('spec.http', i);
      (r.match ?? []).forEach((m, j) => (m.gateways ?? []).forEach((g, k) => checkGateway(g, join(path, 'match', j, 'gateways', k))));
      (r.route ?? []).forEach((d, j) => checkSubset(d.destination, join(path, 'route', j, 'destination')));
      checkSubset(r.mirror, join(path, 'mirror'));
      (r.mirrors ?? []).forEach((m, j) => checkSubset(m.destination, join(path, 'mirrors', j, 'destination')));
      if (r.delegate) {
        const dns = r.delegate.namespace || ns;
        const target = store.get<VirtualService>('VirtualService', dns, r.delegate.name);
        if (!target) report(vs, join(path, 'delegate'), `delegate VirtualService "${dns}/${r.delegate.name}" is not defined in the given files`);
        else if ((target.spec.hosts ?? []).length > 0) report(vs, join(path, 'delegate'), `VirtualService "${dns}/${r.delegate.name}" has hosts, so it cannot be a delegate`);
      }
    });
    for (const key of ['tcp', 'tls'] as const) {
      (spec[key] ?? []).forEach((r, i) => {
        const path = join(`spec.${key}`, i);
        (r.match ?? []).forEach((m, j) => (m.gateways ?? []).forEach((g, k) => checkGateway(g, join(path, 'match', j, 'gateways', k))));
        (r.route ?? []).forEach((d, j) => checkSubset(d.destination, join(path, 'route', j, 'destination')));
      });
    }
  }
  return findings;
}
