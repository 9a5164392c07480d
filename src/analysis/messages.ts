/**
 * The message codes of the analyzers. Codes are stable across releases: a code is never reused
 * for another meaning; retired codes stay reserved.
 */
import type { AnalysisLevel, Finding, MessageType } from './types.js';

function type(code: string, name: string, level: AnalysisLevel, description: string): MessageType {
  return Object.freeze({ code, name, level, description });
}

export const MESSAGES = Object.freeze({
  ReferencedResourceNotFound: type('MESH0101', 'ReferencedResourceNotFound', 'ERROR', 'A resource names another resource (a Gateway, a delegate VirtualService) that does not exist.'),
  UnknownDestinationHost: type('MESH0102', 'UnknownDestinationHost', 'WARNING', 'A route destination names a host no service or ServiceEntry defines.'),
  UnknownDestinationSubset: type('MESH0103', 'UnknownDestinationSubset', 'ERROR', 'A route destination names a subset that no applicable DestinationRule defines.'),
  GatewaySelectorMatchesNothing: type('MESH0104', 'GatewaySelectorMatchesNothing', 'ERROR', 'A Gateway selector matches no workload, so no gateway proxy serves it.'),
  ConflictingDestinationRules: type('MESH0105', 'ConflictingDestinationRules', 'WARNING', 'Several DestinationRules of one namespace apply to the same host; only the oldest takes effect.'),
  SchemaValidationError: type('MESH0107', 'SchemaValidationError', 'ERROR', 'A resource does not pass validation; the daemon ignores it and keeps the last valid version.'),
  ServiceEntryWithoutPorts: type('MESH0106', 'ServiceEntryWithoutPorts', 'WARNING', 'A ServiceEntry declares no ports, so proxies get no listener or cluster for its hosts.'),
});

export type MessageName = keyof typeof MESSAGES;

/** All message types, ordered by code. */
export const MESSAGE_TYPES: ReadonlyArray<MessageType> = Object.freeze(Object.values(MESSAGES).sort((a, b) => a.code.localeCompare(b.code)));

/** A finding of `type` about an object. */
export function finding(
  type: MessageType,
  object: { readonly meta: { readonly gvk: { readonly kind: string }; readonly namespace: string; readonly name: string } },
  message: string,
  path?: string,
): Finding {
  return {
    kind: object.meta.gvk.kind,
    namespace: object.meta.namespace,
    name: object.meta.name,
    code: type.code,
    level: type.level,
    message,
    ...(path ? { path } : {}),
  };
}
