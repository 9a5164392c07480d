#!/usr/bin/env node
// Generates the config-API schemas from the project's own protos (see docs/adr/0003-config-api-from-protos.md).
//
// Input:  src/gen/mesh-descriptor.pb, the FileDescriptorSet (with source info) written by gen-proto.mjs.
// Output: src/gen/config/schemas.ts  zod 4 schema + inferred type per message and enum, and `configKinds`;
//         src/gen/config/openapi.json OpenAPI v3 structural schema per config kind, for the CRDs.
//
// Markers read from the proto comments (a comment line that starts with `+`):
//   `+required` on a field                          the field must be present (and not empty);
//   `+kind plural=<plural> [scope=Cluster]` on a message   the message is the spec of a config kind.
// The group of a kind comes from its package: mesh.<area>.v1 -> <area>.mesh.io, version v1.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const descriptorPath = join(root, 'src', 'gen', 'mesh-descriptor.pb');
const outDir = join(root, 'src', 'gen', 'config');

// The duration pattern is also exported by src/util/config-duration.ts; the two must agree (a test checks it).
const DURATION_PATTERN = '^(?:\\d+(?:\\.\\d+)?(?:ns|us|µs|ms|s|m|h))+$';
const OWN_PACKAGE = /^mesh\./;

// Descriptor field numbers used in SourceCodeInfo paths.
const PATH = { fileMessage: 4, fileEnum: 5, messageField: 2, messageNested: 3, messageEnum: 4 };

function fail(message) {
  console.error(`gen-config-schema: ${message}`);
  process.exit(1);
}

function loadDescriptorSet() {
  const descriptorJson = require('protobufjs/google/protobuf/descriptor.json');
  const types = protobuf.Root.fromJSON(descriptorJson);
  const FileDescriptorSet = types.lookupType('google.protobuf.FileDescriptorSet');
  let bytes;
  try {
    bytes = readFileSync(descriptorPath);
  } catch {
    fail(`${descriptorPath} is missing: run node scripts/gen-proto.mjs first`);
  }
  const set = FileDescriptorSet.toObject(FileDescriptorSet.decode(bytes), {
    enums: String,
    longs: Number,
    arrays: true,
    defaults: false,
  });
  return set.file;
}

/** Leading comment text of an element, without marker lines; markers returned apart. */
function splitComment(raw) {
  const text = [];
  const markers = [];
  for (const line of (raw ?? '').split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('+')) markers.push(trimmed.slice(1));
    else text.push(trimmed);
  }
  while (text.length > 0 && text[text.length - 1] === '') text.pop();
  while (text.length > 0 && text[0] === '') text.shift();
  return { text: text.join('\n'), markers };
}

/** Collects every message and enum of the set under its fully qualified name (leading dot). */
function indexTypes(files) {
  const types = new Map();
  for (const file of files) {
    const comments = new Map();
    for (const loc of file.sourceCodeInfo?.location ?? []) {
      if (loc.leadingComments) comments.set(loc.path.join('.'), loc.leadingComments);
    }
    const own = OWN_PACKAGE.test(file.package ?? '');
    const visitEnum = (e, prefix, tsPrefix, path) => {
      const fqn = `${prefix}.${e.name}`;
      types.set(fqn, {
        type: 'enum',
        fqn,
        own,
        pkg: file.package,
        tsName: tsPrefix ? `${tsPrefix}_${e.name}` : e.name,
        values: (e.value ?? []).map((v) => v.name),
        comment: splitComment(comments.get(path.join('.'))),
      });
    };
    const visitMessage = (m, prefix, tsPrefix, path) => {
      const fqn = `${prefix}.${m.name}`;
      const tsName = tsPrefix ? `${tsPrefix}_${m.name}` : m.name;
      types.set(fqn, {
        type: 'message',
        fqn,
        own,
        pkg: file.package,
        tsName,
        desc: m,
        mapEntry: Boolean(m.options?.mapEntry),
        comment: splitComment(comments.get(path.join('.'))),
        fieldComments: (m.field ?? []).map((_, i) => splitComment(comments.get([...path, PATH.messageField, i].join('.')))),
      });
      (m.nestedType ?? []).forEach((n, i) => visitMessage(n, fqn, tsName, [...path, PATH.messageNested, i]));
      (m.enumType ?? []).forEach((e, i) => visitEnum(e, fqn, tsName, [...path, PATH.messageEnum, i]));
    };
    const pkgPrefix = file.package ? `.${file.package}` : '';
    (file.messageType ?? []).forEach((m, i) => visitMessage(m, pkgPrefix, '', [PATH.fileMessage, i]));
    (file.enumType ?? []).forEach((e, i) => visitEnum(e, pkgPrefix, '', [PATH.fileEnum, i]));
  }
  return types;
}

// ---------------------------------------------------------------------------------------------
// Field model shared by both emitters.

const WRAPPERS = {
  '.google.protobuf.DoubleValue': 'TYPE_DOUBLE',
  '.google.protobuf.FloatValue': 'TYPE_FLOAT',
  '.google.protobuf.Int64Value': 'TYPE_INT64',
  '.google.protobuf.UInt64Value': 'TYPE_UINT64',
  '.google.protobuf.Int32Value': 'TYPE_INT32',
  '.google.protobuf.UInt32Value': 'TYPE_UINT32',
  '.google.protobuf.BoolValue': 'TYPE_BOOL',
  '.google.protobuf.StringValue': 'TYPE_STRING',
  '.google.protobuf.BytesValue': 'TYPE_BYTES',
};

const SCALAR_KIND = {
  TYPE_DOUBLE: 'number',
  TYPE_FLOAT: 'number',
  TYPE_INT32: 'int32',
  TYPE_SINT32: 'int32',
  TYPE_SFIXED32: 'int32',
  TYPE_UINT32: 'uint32',
  TYPE_FIXED32: 'uint32',
  TYPE_INT64: 'int64',
  TYPE_SINT64: 'int64',
  TYPE_SFIXED64: 'int64',
  TYPE_UINT64: 'uint64',
  TYPE_FIXED64: 'uint64',
  TYPE_BOOL: 'bool',
  TYPE_STRING: 'string',
  TYPE_BYTES: 'bytes',
};

/**
 * A value shape: { kind: scalar kind | 'duration' | 'timestamp' | 'struct' | 'value' | 'list' | 'empty' }
 * or { kind: 'enum' | 'message', ref: type entry }.
 */
function valueShape(types, field) {
  if (field.type === 'TYPE_ENUM') return { kind: 'enum', ref: lookup(types, field.typeName) };
  if (field.type === 'TYPE_MESSAGE' || field.type === 'TYPE_GROUP') {
    const name = field.typeName;
    if (WRAPPERS[name]) return { kind: SCALAR_KIND[WRAPPERS[name]] };
    switch (name) {
      case '.google.protobuf.Duration':
        return { kind: 'duration' };
      case '.google.protobuf.Timestamp':
        return { kind: 'timestamp' };
      case '.google.protobuf.Struct':
        return { kind: 'struct' };
      case '.google.protobuf.Value':
        return { kind: 'value' };
      case '.google.protobuf.ListValue':
        return { kind: 'list' };
      case '.google.protobuf.Empty':
        return { kind: 'empty' };
      default: {
        const ref = lookup(types, name);
        if (!ref.own) fail(`field ${field.name} uses ${name}, which has no JSON mapping here`);
        return { kind: 'message', ref };
      }
    }
  }
  const kind = SCALAR_KIND[field.type];
  if (!kind) fail(`field ${field.name} has unsupported type ${field.type}`);
  return { kind };
}

function lookup(types, fqn) {
  const t = types.get(fqn);
  if (!t) fail(`unknown type ${fqn}`);
  return t;
}

/** Fields of a message with their JSON name, cardinality, value shape and markers. */
function fieldsOf(types, msg) {
  return (msg.desc.field ?? []).map((f, i) => {
    const comment = msg.fieldComments[i];
    const base = {
      name: f.name,
      json: f.jsonName ?? f.name,
      required: comment.markers.includes('required'),
      description: comment.text,
      oneofIndex: f.proto3Optional ? undefined : f.oneofIndex,
    };
    const repeated = f.label === 'LABEL_REPEATED';
    if (repeated && f.type === 'TYPE_MESSAGE') {
      const entry = types.get(f.typeName);
      if (entry?.mapEntry) {
        const [keyField, valueField] = entry.desc.field;
        return { ...base, card: 'map', keyKind: SCALAR_KIND[keyField.type], value: valueShape(types, valueField) };
      }
    }
    return { ...base, card: repeated ? 'list' : 'single', value: valueShape(types, f) };
  });
}

/** Oneof groups of a message (synthetic proto3-optional oneofs left out): [{ name, fields: [json names] }]. */
function oneofsOf(msg, fields) {
  return (msg.desc.oneofDecl ?? [])
    .map((o, index) => ({ name: o.name, fields: fields.filter((f) => f.oneofIndex === index).map((f) => f.json) }))
    .filter((o) => o.fields.length > 0);
}

function kindMarker(msg) {
  const marker = msg.comment.markers.find((m) => m === 'kind' || m.startsWith('kind '));
  if (!marker) return undefined;
  const opts = Object.fromEntries(
    marker
      .split(/\s+/)
      .slice(1)
      .map((kv) => kv.split('=')),
  );
  const m = /^mesh\.([a-z]+)\.(v[0-9a-z]+)$/.exec(msg.pkg);
  if (!m) fail(`kind ${msg.tsName}: package ${msg.pkg} is not of the form mesh.<area>.<version>`);
  if (!opts.plural) fail(`kind ${msg.tsName}: the +kind marker needs plural=<name>`);
  return {
    group: `${m[1]}.mesh.io`,
    version: m[2],
    kind: msg.desc.name,
    plural: opts.plural,
    namespaced: (opts.scope ?? 'Namespaced') !== 'Cluster',
  };
}

// ---------------------------------------------------------------------------------------------
// zod emitter

function zodValue(shape) {
  switch (shape.kind) {
    case 'number':
      return 'z.number()';
    case 'int32':
      return 'int32()';
    case 'uint32':
      return 'uint32()';
    case 'int64':
      return 'int64()';
    case 'uint64':
      return 'uint64()';
    case 'bool':
      return 'z.boolean()';
    case 'string':
      return 'z.string()';
    case 'bytes':
      return 'z.base64()';
    case 'duration':
      return 'duration()';
    case 'timestamp':
      return 'z.iso.datetime()';
    case 'struct':
      return 'z.record(z.string(), z.unknown())';
    case 'value':
      return 'z.unknown()';
    case 'list':
      return 'z.array(z.unknown())';
    case 'empty':
      return 'z.strictObject({})';
    case 'enum':
    case 'message':
      return `${shape.ref.tsName}Schema`;
    default:
      throw new Error(`no zod mapping for ${shape.kind}`);
  }
}

const MAP_KEY = {
  string: 'z.string()',
  int32: 'z.string().regex(/^-?\\d+$/, "map key must be an integer")',
  int64: 'z.string().regex(/^-?\\d+$/, "map key must be an integer")',
  uint32: 'z.string().regex(/^\\d+$/, "map key must be a non-negative integer")',
  uint64: 'z.string().regex(/^\\d+$/, "map key must be a non-negative integer")',
  bool: 'z.enum(["true", "false"])',
};

function zodField(field) {
  let expr;
  if (field.card === 'map') {
    const key = MAP_KEY[field.keyKind];
    if (!key) fail(`field ${field.name}: map key type ${field.keyKind} is not supported`);
    expr = `z.record(${key}, ${zodValue(field.value)})`;
  } else if (field.card === 'list') {
    expr = `z.array(${zodValue(field.value)})`;
    if (field.required) expr += '.min(1, "must not be empty")';
  } else {
    expr = zodValue(field.value);
    if (field.required && field.value.kind === 'string') expr += '.min(1, "must not be empty")';
  }
  return field.required ? expr : `${expr}.optional()`;
}

function jsDoc(text, indent) {
  if (!text) return '';
  const lines = text.replace(/\*\//g, '*\\/').split('\n');
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} *${l ? ` ${l}` : ''}`).join('\n')}\n${indent} */\n`;
}

/** Messages and enums in dependency order (a schema is declared before its users). */
function orderOwnTypes(types) {
  const own = [...types.values()].filter((t) => t.own && !t.mapEntry);
  const ordered = [];
  const state = new Map(); // fqn -> 'visiting' | 'done'
  const visit = (t, trail) => {
    const s = state.get(t.fqn);
    if (s === 'done') return;
    if (s === 'visiting') fail(`recursive message types are not supported: ${[...trail, t.tsName].join(' -> ')}`);
    state.set(t.fqn, 'visiting');
    if (t.type === 'message') {
      for (const f of fieldsOf(types, t)) {
        if (f.value.ref) visit(f.value.ref, [...trail, t.tsName]);
      }
    }
    state.set(t.fqn, 'done');
    ordered.push(t);
  };
  own.sort((a, b) => a.tsName.localeCompare(b.tsName)).forEach((t) => visit(t, []));
  const seen = new Map();
  for (const t of ordered) {
    if (seen.has(t.tsName)) fail(`name clash: ${seen.get(t.tsName)} and ${t.fqn} both map to ${t.tsName}`);
    seen.set(t.tsName, t.fqn);
  }
  return ordered;
}

function emitZod(types, ordered, kinds) {
  const out = [];
  out.push(`// Generated by scripts/gen-config-schema.mjs from the protos under proto/. Do not edit.
import { z } from 'zod';
import { DURATION_PATTERN } from '../../util/config-duration.js';

const int32 = () => z.number().int().min(-2147483648).max(2147483647);
const uint32 = () => z.number().int().min(0).max(4294967295);
const int64 = () => z.number().int().refine(Number.isSafeInteger, 'must be a safe integer');
const uint64 = () => z.number().int().min(0).refine(Number.isSafeInteger, 'must be a safe integer');
const duration = () =>
  z.string().regex(DURATION_PATTERN, 'must be a duration such as "1.5s", "100ms" or "1m30s"');

/** Rejects objects that set more than one member of a oneof group. */
function atMostOne<T extends object>(oneof: string, members: readonly string[]) {
  return (value: T, ctx: z.core.$RefinementCtx<T>): void => {
    const record = value as Record<string, unknown>;
    const present = members.filter((m) => record[m] !== undefined);
    if (present.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: [present[1]],
        message: \`only one of \${members.join(', ')} may be set (oneof "\${oneof}"), found \${present.join(' and ')}\`,
      });
    }
  };
}`);
  for (const t of ordered) {
    out.push('');
    out.push(jsDoc(t.comment.text, '').trimEnd());
    if (t.type === 'enum') {
      out.push(`export const ${t.tsName}Schema = z.enum([${t.values.map((v) => JSON.stringify(v)).join(', ')}]);`);
      out.push(`export type ${t.tsName} = z.infer<typeof ${t.tsName}Schema>;`);
      continue;
    }
    const fields = fieldsOf(types, t);
    const body = fields.map((f) => `${jsDoc(f.description, '  ')}  ${f.json}: ${zodField(f)},`).join('\n');
    let expr = fields.length > 0 ? `z.strictObject({\n${body}\n})` : 'z.strictObject({})';
    for (const o of oneofsOf(t, fields)) {
      if (o.fields.length > 1) {
        expr += `.superRefine(atMostOne(${JSON.stringify(o.name)}, [${o.fields.map((f) => JSON.stringify(f)).join(', ')}]))`;
      }
    }
    out.push(`export const ${t.tsName}Schema = ${expr};`);
    out.push(`export type ${t.tsName} = z.infer<typeof ${t.tsName}Schema>;`);
  }
  out.push('');
  out.push('/** The config kinds defined by the protos: API coordinates and spec schema of each. */');
  out.push('export const configKinds = {');
  for (const k of kinds) {
    out.push(
      `  ${k.kind}: { group: '${k.group}', version: '${k.version}', kind: '${k.kind}', plural: '${k.plural}', namespaced: ${k.namespaced}, schema: ${k.tsName}Schema },`,
    );
  }
  out.push('} as const;');
  out.push('');
  out.push('export type ConfigKindName = keyof typeof configKinds;');
  out.push('');
  out.push('/** Spec type of each config kind. */');
  out.push('export interface ConfigKindSpecs {');
  for (const k of kinds) out.push(`  ${k.kind}: ${k.tsName};`);
  out.push('}');
  out.push('');
  return out.filter((line, i, all) => !(line === '' && all[i - 1] === '')).join('\n');
}

// ---------------------------------------------------------------------------------------------
// OpenAPI v3 (structural, as the API server wants for CRDs: no $ref, types everywhere).

function openApiValue(types, shape, trail) {
  switch (shape.kind) {
    case 'number':
      return { type: 'number', format: 'double' };
    case 'int32':
      return { type: 'integer', format: 'int32' };
    case 'uint32':
      return { type: 'integer', minimum: 0, maximum: 4294967295 };
    case 'int64':
      return { type: 'integer', format: 'int64' };
    case 'uint64':
      return { type: 'integer', format: 'int64', minimum: 0 };
    case 'bool':
      return { type: 'boolean' };
    case 'string':
      return { type: 'string' };
    case 'bytes':
      return { type: 'string', format: 'byte' };
    case 'duration':
      return { type: 'string', pattern: DURATION_PATTERN };
    case 'timestamp':
      return { type: 'string', format: 'date-time' };
    case 'struct':
      return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    case 'value':
      return { 'x-kubernetes-preserve-unknown-fields': true };
    case 'list':
      return { type: 'array', items: { 'x-kubernetes-preserve-unknown-fields': true } };
    case 'empty':
      return { type: 'object' };
    case 'enum':
      return { type: 'string', enum: [...shape.ref.values] };
    case 'message':
      return openApiMessage(types, shape.ref, trail);
    default:
      throw new Error(`no OpenAPI mapping for ${shape.kind}`);
  }
}

function withDescription(schema, text) {
  return text ? { description: text, ...schema } : schema;
}

function openApiMessage(types, msg, trail) {
  if (trail.includes(msg.fqn)) fail(`recursive message ${msg.fqn} cannot be inlined`);
  const next = [...trail, msg.fqn];
  const fields = fieldsOf(types, msg);
  const properties = {};
  const required = [];
  for (const f of fields) {
    let schema;
    if (f.card === 'map') {
      schema = { type: 'object', additionalProperties: openApiValue(types, f.value, next) };
    } else if (f.card === 'list') {
      schema = { type: 'array', items: openApiValue(types, f.value, next) };
      if (f.required) schema.minItems = 1;
    } else {
      schema = openApiValue(types, f.value, next);
      if (f.required && f.value.kind === 'string') schema.minLength = 1;
    }
    properties[f.json] = withDescription(schema, f.description);
    if (f.required) required.push(f.json);
  }
  const schema = { type: 'object', properties };
  if (required.length > 0) schema.required = required;
  // At most one member of each oneof: either none is present, or exactly one branch matches.
  const groups = oneofsOf(msg, fields)
    .filter((o) => o.fields.length > 1)
    .map((o) => ({
      oneOf: [{ not: { anyOf: o.fields.map((f) => ({ required: [f] })) } }, ...o.fields.map((f) => ({ required: [f] }))],
    }));
  if (groups.length === 1) Object.assign(schema, groups[0]);
  else if (groups.length > 1) schema.allOf = groups;
  return schema;
}

function emitOpenApi(types, kinds) {
  const doc = {};
  for (const k of kinds) {
    const spec = withDescription(openApiMessage(types, k.msg, []), k.msg.comment.text);
    doc[k.kind] = {
      group: k.group,
      version: k.version,
      plural: k.plural,
      namespaced: k.namespaced,
      schema: {
        type: 'object',
        properties: {
          spec,
          status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        },
      },
    };
  }
  return `${JSON.stringify(doc, null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------

const started = Date.now();
const types = indexTypes(loadDescriptorSet());
const ordered = orderOwnTypes(types);
const kinds = ordered
  .filter((t) => t.type === 'message')
  .map((t) => {
    const k = kindMarker(t);
    return k ? { ...k, tsName: t.tsName, msg: t } : undefined;
  })
  .filter(Boolean)
  .sort((a, b) => a.kind.localeCompare(b.kind));
const kindNames = new Set();
for (const k of kinds) {
  if (kindNames.has(k.kind)) fail(`kind ${k.kind} is declared twice`);
  kindNames.add(k.kind);
}
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'schemas.ts'), emitZod(types, ordered, kinds));
writeFileSync(join(outDir, 'openapi.json'), emitOpenApi(types, kinds));
console.log(
  `gen-config-schema: ${ordered.length} messages and enums, ${kinds.length} kinds -> src/gen/config in ${Date.now() - started} ms`,
);
