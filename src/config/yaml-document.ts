/**
 * One YAML document checked against a zod schema, as the mesh config and mesh networks are read
 * (from files and from the mesh ConfigMap): invalid YAML or a field the schema refuses becomes a
 * ConfigError whose lines start with `origin` and name the field.
 */
import type { z } from 'zod';
import { ConfigError } from '../util/config-error.js';
import { readYaml } from '../util/yaml.js';
import { formatSchemaIssue } from './validation/schema-issues.js';

export function parseYamlDocument<S extends z.ZodType>(text: string, origin: string, schema: S): z.infer<S> {
  let doc: unknown;
  try {
    doc = readYaml(text) ?? {};
  } catch (e) {
    throw new ConfigError([`${origin}: invalid YAML: ${e instanceof Error ? e.message : String(e)}`]);
  }
  const r = schema.safeParse(doc, { reportInput: true });
  if (!r.success) throw new ConfigError(r.error.issues.flatMap((i) => formatSchemaIssue(i)).map((i) => `${origin}: ${i.path}: ${i.message}`));
  return r.data;
}
