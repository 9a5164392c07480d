/**
 * The one way the project reads YAML (the `yaml` package): YAML 1.1 as the Kubernetes tooling
 * applies it (bare yes/no/on/off are booleans, 0777 is octal), so a file means the same here as
 * when applied to a cluster; timestamps and base-60 numbers stay strings, as they do there;
 * duplicate keys are errors; aliases are bounded (a small document cannot expand without limit).
 */
import { parseAllDocuments, parseDocument, type Document, type Tags } from 'yaml';

function withoutTimestamps(tags: Tags): Tags {
  return tags.filter((t) => typeof t === 'string' || (t.tag !== 'tag:yaml.org,2002:timestamp' && t.format !== 'TIME'));
}

export const YAML_READ_OPTIONS = { version: '1.1', customTags: withoutTimestamps, uniqueKeys: true, prettyErrors: true } as const;

/** Alias expansions a document may make before reading it fails. */
export const MAX_YAML_ALIASES = 100;

/** Every document of a YAML stream; each keeps its own errors (`doc.errors`). */
export function readYamlDocuments(text: string): Document.Parsed[] {
  return parseAllDocuments(text, YAML_READ_OPTIONS) as Document.Parsed[];
}

/** The value of a parsed document (null for an empty one). Throws when aliases expand too much. */
export function yamlValue(doc: Document.Parsed): unknown {
  return doc.toJS({ maxAliasCount: MAX_YAML_ALIASES });
}

/** The value of a text of one document (null when empty). Throws the first syntax error. */
export function readYaml(text: string): unknown {
  const doc = parseDocument(text, YAML_READ_OPTIONS);
  if (doc.errors.length > 0) throw doc.errors[0];
  return yamlValue(doc);
}
