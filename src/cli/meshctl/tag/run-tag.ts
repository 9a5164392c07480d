/**
 * What `meshctl tag generate|list|set|remove` and `meshctl x revision tag ...` do (src/install/tags.ts
 * has the rules), as command outcomes: `generate` prints the tag's webhook configuration as YAML
 * without applying it; `list` prints TAG / REVISION / NAMESPACES (or JSON with `-o json` under
 * `x revision`); `set` and `remove` change the cluster and say what they did.
 */
import type { KubeClient } from '../../../kube/client.js';
import { INJECTION_NAMESPACE_LABEL, REVISION_LABEL } from '../../../install/labels.js';
import { listTags, prepareTag, removeTag, setTag, type SetTagRequest } from '../../../install/tags.js';
import { toYaml } from '../../../install/yaml-io.js';
import { renderJson, renderTable } from '../../output.js';
import type { CommandOutcome } from '../../runner.js';

export async function runTagGenerate(client: KubeClient, req: SetTagRequest): Promise<CommandOutcome> {
  const { webhook } = await prepareTag(client, req);
  return { stdout: toYaml(webhook) };
}

export async function runTagSet(client: KubeClient, req: SetTagRequest): Promise<CommandOutcome> {
  const { previous: prev, revision } = await setTag(client, req);
  let message: string;
  if (!prev) {
    message =
      `Revision tag "${req.tag}" created, pointing to revision "${revision}".\n` +
      `To inject pods of a namespace with it: kubectl label namespace <namespace> ${REVISION_LABEL}=${req.tag} ${INJECTION_NAMESPACE_LABEL}-\n`;
  } else if (prev.revision === revision) {
    message = `Revision tag "${req.tag}" already points to revision "${revision}"; its webhook configuration was refreshed.\n`;
  } else {
    message = `Revision tag "${req.tag}" now points to revision "${revision}" (was "${prev.revision}").\n`;
    if (prev.namespaces.length > 0) message += `Restart the workloads of namespaces ${prev.namespaces.join(', ')} to pick up the new revision.\n`;
  }
  return { stdout: message };
}

export async function runTagList(client: KubeClient, opts: { readonly output?: 'table' | 'json'; readonly color?: boolean } = {}): Promise<CommandOutcome> {
  const tags = await listTags(client);
  if (opts.output === 'json') return { stdout: renderJson(tags) };
  if (tags.length === 0) return { stdout: 'No revision tags found.\n' };
  return { stdout: renderTable(['TAG', 'REVISION', 'NAMESPACES'], tags.map((t) => [t.tag, t.revision, t.namespaces.join(',')]), { color: opts.color }) };
}

export async function runTagRemove(client: KubeClient, tag: string, opts: { readonly yes?: boolean }): Promise<CommandOutcome> {
  const { namespaces } = await removeTag(client, tag, opts);
  let message = `Revision tag "${tag}" removed.\n`;
  if (namespaces.length > 0) message += `Pods created from now on in namespaces ${namespaces.join(', ')} get no sidecar until they are labelled with an installed revision or tag.\n`;
  return { stdout: message };
}
