/**
 * Test helpers for the generated CRDs (crds/): the OpenAPI v3 subset the CRD schemas use, a
 * checker of the structural-schema rules the API server enforces on a CRD, and a small validator
 * of documents against a schema. Both are deliberately independent of scripts/gen-crds.mjs.
 */

import { isRecord } from '../../src/util/record.js';

/** The OpenAPI v3 keywords a CRD schema may carry (plus the ones the checker must refuse). */
export interface Schema {
  description?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  items?: Schema | Schema[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  required?: string[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  not?: Schema;
  nullable?: boolean;
  default?: unknown;
  uniqueItems?: boolean;
  $ref?: string;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
}

const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
const JUNCTORS = ['oneOf', 'anyOf', 'allOf'] as const;
/** Keywords a structural schema must not set inside oneOf/anyOf/allOf/not. */
const FORBIDDEN_IN_JUNCTOR = ['description', 'type', 'default', 'additionalProperties', 'nullable'] as const;
const KNOWN_KEYWORDS = new Set([
  'description', 'type', 'format', 'enum', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'multipleOf', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'items',
  'properties', 'additionalProperties', 'required', 'oneOf', 'anyOf', 'allOf', 'not', 'nullable', 'default', 'title',
  'example', 'externalDocs', 'uniqueItems', '$ref',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-int-or-string', 'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys', 'x-kubernetes-map-type', 'x-kubernetes-embedded-resource',
]);
/** Regular-expression syntax that JavaScript has and RE2 (the API server's engine) has not. */
const NOT_RE2 = /\(\?<?[=!]|\\[1-9]|\\k</;


/** Whether a schema node (typed, but read from a file) really is an object. Not a type guard on purpose. */
function isSchemaObject(v: unknown): boolean {
  return isRecord(v);
}

/**
 * Violations of the structural-schema rules in a CRD's openAPIV3Schema, as `path: problem`
 * (empty when the schema is structural):
 * 1. every node (root, property, additionalProperties, items) has a type, except nodes with
 *    x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields;
 * 2. a property or items set inside oneOf/anyOf/allOf/not is also set outside of them;
 * 3. no description, type, default, additionalProperties or nullable inside oneOf/anyOf/allOf/not;
 * 4. the root metadata only restricts name and generateName;
 * plus what the API server refuses besides: $ref, properties together with additionalProperties,
 * additionalProperties as a boolean, items as a list, uniqueItems, preserve-unknown-fields false,
 * a list-type map whose keys are not required; and the project's own rules: enums are string enums,
 * patterns compile and stay within RE2, `required` names declared properties.
 */
export function structuralViolations(root: Schema): string[] {
  const out: string[] = [];
  const report = (path: string, problem: string) => out.push(`${path || '<root>'}: ${problem}`);

  const checkCommon = (node: Schema, path: string) => {
    for (const key of Object.keys(node)) {
      if (!KNOWN_KEYWORDS.has(key)) report(path, `unknown keyword ${key}`);
    }
    if (node.$ref !== undefined) report(path, '$ref is not allowed');
    if (node.type !== undefined && !TYPES.has(node.type)) report(path, `type ${String(node.type)} is not an OpenAPI type`);
    if (node.properties !== undefined && node.additionalProperties !== undefined) {
      report(path, 'properties and additionalProperties are mutually exclusive');
    }
    if (typeof node.additionalProperties === 'boolean') report(path, 'additionalProperties must be a schema');
    if (Array.isArray(node.items)) report(path, 'items must be one schema, not a list');
    if (node.uniqueItems === true) report(path, 'uniqueItems is not allowed');
    if (node['x-kubernetes-preserve-unknown-fields'] === false) report(path, 'x-kubernetes-preserve-unknown-fields may only be true');
    if (node['x-kubernetes-int-or-string'] !== undefined) {
      if (node['x-kubernetes-int-or-string'] !== true) report(path, 'x-kubernetes-int-or-string may only be true');
      if (node.type !== undefined) report(path, 'an int-or-string node has no type');
    }
    if (node.enum !== undefined) {
      if (node.type !== 'string') report(path, 'enums must be string enums (type: string)');
      if (!Array.isArray(node.enum) || node.enum.length === 0 || node.enum.some((v) => typeof v !== 'string')) {
        report(path, 'enum values must be a non-empty list of strings');
      }
    }
    if (node.pattern !== undefined) {
      try {
        new RegExp(node.pattern, 'u');
      } catch (err) {
        report(path, `pattern does not compile: ${(err as Error).message}`);
      }
      if (NOT_RE2.test(node.pattern)) report(path, 'pattern uses lookaround or backreferences, which RE2 lacks');
    }
  };

  /** Rules 2 and 3 for a node inside a junctor; `outside` is the node at the same place outside. */
  const walkJunctorBranch = (branch: Schema, outside: Schema | undefined, path: string) => {
    if (!isSchemaObject(branch)) return report(path, 'not a schema object');
    checkCommon(branch, path);
    for (const key of FORBIDDEN_IN_JUNCTOR) {
      if (branch[key] !== undefined) report(path, `${key} is not allowed inside oneOf/anyOf/allOf/not`);
    }
    for (const name of branch.required ?? []) {
      if (!outside?.properties?.[name] && !outside?.['x-kubernetes-preserve-unknown-fields']) {
        report(path, `required ${name} names a property not declared outside the junctor`);
      }
    }
    for (const [name, sub] of Object.entries(branch.properties ?? {})) {
      const there = outside?.properties?.[name];
      if (!there) report(`${path}.properties.${name}`, 'property is not also specified outside the junctor');
      walkJunctorBranch(sub, there, `${path}.properties.${name}`);
    }
    if (branch.items !== undefined && !Array.isArray(branch.items)) {
      const there = outside && !Array.isArray(outside.items) ? outside.items : undefined;
      if (!there) report(`${path}.items`, 'items are not also specified outside the junctor');
      walkJunctorBranch(branch.items, there, `${path}.items`);
    }
    for (const j of JUNCTORS) branch[j]?.forEach((b, i) => walkJunctorBranch(b, outside, `${path}.${j}[${i}]`));
    if (branch.not !== undefined) walkJunctorBranch(branch.not, outside, `${path}.not`);
  };

  const walk = (node: Schema, path: string) => {
    if (!isSchemaObject(node)) return report(path, 'not a schema object');
    checkCommon(node, path);
    const exempt = node['x-kubernetes-preserve-unknown-fields'] === true || node['x-kubernetes-int-or-string'] === true;
    if (node.type === undefined && !exempt) report(path, 'type is missing');
    for (const name of node.required ?? []) {
      if (!node.properties?.[name]) report(path, `required ${name} is not a declared property`);
    }
    for (const [name, sub] of Object.entries(node.properties ?? {})) walk(sub, `${path}.properties.${name}`);
    if (isSchemaObject(node.additionalProperties) && typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${path}.additionalProperties`);
    if (node.items !== undefined && !Array.isArray(node.items)) walk(node.items, `${path}.items`);
    if (node.type === 'array' && node.items === undefined) report(path, 'an array needs items');
    if (node['x-kubernetes-list-type'] === 'map') {
      const items = Array.isArray(node.items) ? undefined : node.items;
      if (items?.type !== 'object') report(path, 'a list-type map needs object items');
      for (const key of node['x-kubernetes-list-map-keys'] ?? []) {
        if (!items?.required?.includes(key)) report(path, `list map key ${key} must be a required property of the items`);
      }
    }
    for (const j of JUNCTORS) node[j]?.forEach((b, i) => walkJunctorBranch(b, node, `${path}.${j}[${i}]`));
    if (node.not !== undefined) walkJunctorBranch(node.not, node, `${path}.not`);
  };

  if (!isSchemaObject(root)) return ['<root>: not a schema object'];
  if (root.type !== 'object') report('', 'the root must be type: object');
  const metadata = root.properties?.metadata;
  if (metadata !== undefined) {
    const extra = Object.keys(metadata).filter((k) => k !== 'type' && k !== 'properties');
    const props = Object.keys(metadata.properties ?? {}).filter((k) => k !== 'name' && k !== 'generateName');
    if (metadata.type !== 'object' || extra.length > 0 || props.length > 0) {
      report('.properties.metadata', 'metadata may only restrict name and generateName');
    }
  }
  walk(root, '');
  return out;
}

// ---------------------------------------------------------------------------------------------

/**
 * Issues of `value` against `schema`, as `path: problem`: types, formats int32, int64, date-time, byte,
 * required, enum, pattern, lengths and bounds, properties and additionalProperties, oneOf/anyOf/
 * allOf/not. Fields the schema does not declare are errors (as with strict field validation),
 * unless the node preserves unknown fields. Null counts as absent, as the API server prunes it.
 */
export function validate(schema: Schema, value: unknown, path = ''): string[] {
  const out: string[] = [];
  const at = (p: string) => p || '<root>';
  const issue = (problem: string) => out.push(`${at(path)}: ${problem}`);
  if (value === null || value === undefined) return out;

  const intOrString = schema['x-kubernetes-int-or-string'] === true;
  if (intOrString) {
    if (!(typeof value === 'string' || Number.isInteger(value))) issue(`expected integer or string, got ${describe(value)}`);
  } else if (schema.type !== undefined && !hasType(value, schema.type)) {
    issue(`expected ${schema.type}, got ${describe(value)}`);
    return out;
  }

  if (schema.enum !== undefined && !schema.enum.includes(value)) {
    issue(`${describe(value)} is not one of ${schema.enum.join(', ')}`);
  }
  if (typeof value === 'string') {
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
      issue(`${describe(value)} does not match ${schema.pattern}`);
    }
    if (schema.minLength !== undefined && [...value].length < schema.minLength) issue(`shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) issue(`longer than ${schema.maxLength}`);
    if (schema.format === 'date-time' && !/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(value)) {
      issue(`${describe(value)} is not a date-time`);
    }
    if (schema.format === 'byte' && !/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(value)) {
      issue(`${describe(value)} is not base64`);
    }
  }
  if (typeof value === 'number') {
    if (schema.format === 'int32' && (value < -2147483648 || value > 2147483647)) issue(`${value} is out of the int32 range`);
    if (schema.format === 'int64' && !Number.isSafeInteger(value)) issue(`${value} is out of the safe int64 range`);
    if (schema.minimum !== undefined && value < schema.minimum) issue(`${value} is less than ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) issue(`${value} is more than ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) issue(`needs at least ${schema.minItems} item(s)`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) issue(`has more than ${schema.maxItems} items`);
    const items = schema.items;
    if (items !== undefined && !Array.isArray(items)) value.forEach((v, i) => out.push(...validate(items, v, `${path}[${i}]`)));
  }
  if (isRecord(value)) {
    const present = (k: string) => value[k] !== undefined && value[k] !== null;
    for (const name of schema.required ?? []) {
      if (!present(name)) out.push(`${at(join(path, name))}: required field is missing`);
    }
    const declared = schema.properties ?? {};
    const extra = schema.additionalProperties;
    for (const [k, v] of Object.entries(value)) {
      if (declared[k] !== undefined) out.push(...validate(declared[k], v, join(path, k)));
      else if (isRecord(extra)) out.push(...validate(extra, v, join(path, k)));
      else if (schema.type === 'object' && extra !== true && schema['x-kubernetes-preserve-unknown-fields'] !== true) {
        out.push(`${at(join(path, k))}: unknown field`);
      }
    }
  }

  const passes = (branch: Schema) => validate(branch, value, path).length === 0;
  if (schema.allOf !== undefined) for (const b of schema.allOf) out.push(...validate(b, value, path));
  if (schema.anyOf !== undefined && !schema.anyOf.some(passes)) issue('matches none of the anyOf branches');
  if (schema.oneOf !== undefined) {
    const matched = schema.oneOf.filter(passes).length;
    if (matched !== 1) issue(`must match exactly one oneOf branch, matches ${matched}${oneofHint(schema.oneOf)}`);
  }
  if (schema.not !== undefined && passes(schema.not)) issue('matches the schema under not');
  return out;
}

/** For the generated "at most one of" oneOf shape, names the members. */
function oneofHint(branches: Schema[]): string {
  const members = branches.flatMap((b) => (b.required?.length === 1 ? b.required : []));
  return members.length > 0 ? ` (at most one of ${members.join(', ')} may be set)` : '';
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'object':
      return isRecord(value);
    case 'array':
      return Array.isArray(value);
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    default:
      return false;
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  return `${typeof value} ${typeof value === 'object' ? '' : String(value)}`.trim();
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** The schema node a printer-column JSONPath such as `.spec.mtls.mode` selects, if any. */
export function nodeAtJsonPath(root: Schema, jsonPath: string): Schema | undefined {
  if (!/^(\.[A-Za-z_][A-Za-z0-9_]*)+$/.test(jsonPath)) return undefined;
  let node: Schema | undefined = root;
  for (const part of jsonPath.slice(1).split('.')) {
    node = node?.properties?.[part];
    if (node === undefined) return undefined;
  }
  return node;
}
