/**
 * What `meshctl tag generate|list|set|remove` and `meshctl x revision tag ...` do (tags.ts has the
 * rules), as command outcomes: `generate` prints the tag's webhook configuration as YAML without
 * applying it; `list` prints TAG / REVISION / NAMESPACES (or JSON with `-o json` under
 * `x revision`); `set` and `remove` change the cluster and say what they did.
 */
import type { CommandOutcome } from '../cli/runner.js';
import { renderJson, renderTable } from '../cli/output.js';
import type { KubeClient } from '../kube/client.js';
import { toYaml } from '../install/yaml-io.js';
import { listTags, prepareTag, removeTag, setTag, type SetTagRequest } from './tags.js';

export async function runTagGenerate(client: KubeClient, req: SetTagRequest): Promise<CommandOutcome> {
  const { webhook } = await prepareTag(client, req);
  return { stdout: toYaml(webhook) };
}

export async function runTagSet(client: KubeClient, req: SetTagRequest): Promise<CommandOutcome> {
  const { message } = await setTag(client, req);
  return { stdout: message };
}

export async function runTagList(client: KubeClient, opts: { readonly output?: 'table' | 'json'; readonly color?: boolean } = {}): Promise<CommandOutcome> {
  const tags = await listTags(client);
  if (opts.output === 'json') return { stdout: renderJson(tags) };
  if (tags.length === 0) return { stdout: 'No revision tags found.\n' };
  return { stdout: renderTable(['TAG', 'REVISION', 'NAMESPACES'], tags.map((t) => [t.tag, t.revision, t.namespaces.join(',')]), { color: opts.color }) };
}

export async function runTagRemove(client: KubeClient, tag: string, opts: { readonly yes?: boolean }): Promise<CommandOutcome> {
  return { stdout: await removeTag(client, tag, opts) };
}
