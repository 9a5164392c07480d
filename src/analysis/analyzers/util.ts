/** Helpers the analyzers share: workload selection and findings about Kubernetes objects. */
import { labelsMatch } from '../../model/service.js';
import type { AnalysisInput, AnalysisLevel, Finding, MessageType, WorkloadInfo } from '../types.js';

/** The workloads a selector of a policy in `namespace` can pick: the root namespace's policies reach every namespace. */
export function selectable(input: AnalysisInput, namespace: string): ReadonlyArray<WorkloadInfo> {
  const all = input.workloads ?? [];
  return namespace === input.mesh.rootNamespace ? all : all.filter((w) => w.namespace === namespace);
}

/** True when `selector` (non-empty) picks at least one workload for a policy of `namespace`. */
export function selectsSomething(input: AnalysisInput, namespace: string, selector: Readonly<Record<string, string>>): boolean {
  return selectable(input, namespace).some((w) => labelsMatch(selector, w.labels));
}

export function hasLabels(selector: Readonly<Record<string, string>> | undefined): selector is Readonly<Record<string, string>> {
  return selector !== undefined && Object.keys(selector).length > 0;
}

export function selectorText(selector: Readonly<Record<string, string>>): string {
  return Object.entries(selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** A finding about any object, by kind, namespace and name (Kubernetes objects have no ConfigObject). */
export function findingAbout(type: MessageType, kind: string, namespace: string, name: string, message: string, path?: string, level?: AnalysisLevel): Finding {
  return { kind, namespace, name, code: type.code, level: level ?? type.level, message, ...(path ? { path } : {}) };
}
