/**
 * Annotations analyzer: every annotation of the mesh domain on a config object or a Kubernetes
 * object is one the mesh knows (MESH0108), on a kind it applies to (MESH0109), with a value it can
 * read (MESH0110), and not deprecated (MESH0111).
 */
import { CONFIG_KINDS } from '../../config/kinds.js';
import { join } from '../../config/validation/common.js';
import { annotationInfo, annotationValueProblem, inMeshDomain } from '../annotation-table.js';
import { MESSAGES } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';
import { findingAbout } from './util.js';

function check(out: Finding[], kind: string, appliesAs: string, namespace: string, name: string, annotations: Readonly<Record<string, string>>, base: string): void {
  for (const [key, value] of Object.entries(annotations)) {
    if (!inMeshDomain(key)) continue;
    const path = join(base, key);
    const info = annotationInfo(key);
    if (!info) {
      out.push(findingAbout(MESSAGES.UnknownAnnotation, kind, namespace, name, `unknown annotation ${key}`, path));
      continue;
    }
    if (!info.kinds.includes('*') && !info.kinds.includes(appliesAs)) {
      out.push(findingAbout(MESSAGES.MisplacedAnnotation, kind, namespace, name, `${key} applies to ${info.kinds.join(', ')}, not to ${appliesAs}`, path));
      continue;
    }
    const problem = annotationValueProblem(info, value);
    if (problem) out.push(findingAbout(MESSAGES.InvalidAnnotation, kind, namespace, name, `${key}: ${problem}`, path));
    if (info.deprecated) out.push(findingAbout(MESSAGES.DeprecatedAnnotation, kind, namespace, name, `${key} is deprecated: ${info.deprecated}`, path));
  }
}

export const annotationsAnalyzer: Analyzer = {
  name: 'annotations',
  description: 'Checks that mesh annotations are known, placed on resources they apply to, valid and not deprecated.',
  codes: [MESSAGES.UnknownAnnotation.code, MESSAGES.MisplacedAnnotation.code, MESSAGES.InvalidAnnotation.code, MESSAGES.DeprecatedAnnotation.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const def of CONFIG_KINDS) {
      for (const o of input.configs.list(def.kind)) check(out, def.kind, def.kind, o.meta.namespace, o.meta.name, o.meta.annotations, 'metadata.annotations');
    }
    const kube = input.kube;
    if (!kube) return out;
    for (const n of kube.namespaces) check(out, 'Namespace', 'Namespace', '', n.name, n.annotations, 'metadata.annotations');
    for (const p of kube.pods) check(out, 'Pod', 'Pod', p.namespace, p.name, p.annotations, 'metadata.annotations');
    for (const d of kube.deployments) {
      check(out, 'Deployment', 'Pod', d.namespace, d.name, d.template.annotations, 'spec.template.metadata.annotations');
      check(out, 'Deployment', 'Deployment', d.namespace, d.name, d.annotations, 'metadata.annotations');
    }
    for (const s of kube.services) check(out, 'Service', 'Service', s.namespace, s.name, s.annotations, 'metadata.annotations');
    return out;
  },
};
