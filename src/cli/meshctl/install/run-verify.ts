/**
 * What `meshctl verify-install` does: renders the installation (from `-f` files, or from the
 * installed state `installed-state[-R]` of the `-i/--meshNamespace` namespace when no file is
 * given), then checks once that every object exists and is ready (engine.ts
 * `verifyInstallation`). One line per object; the exit code is 1 when any is not ready, and the
 * error names each of them with the reason.
 */
import { verifyInstallation } from '../../../install/apply/engine.js';
import { readInstalledState, revisionOf, stateName } from '../../../install/apply/state.js';
import { InstallError } from '../../../install/errors.js';
import { manifestSource } from '../../../install/sources.js';
import type { CommandOutcome } from '../../runner.js';
import { CHECK, CROSS } from './progress.js';
import { describeTarget, renderFlags, renderSpec, type ClientFactory } from './run-install.js';

export interface VerifyRequest {
  readonly files: readonly string[];
  readonly manifests?: string;
  readonly revision?: string;
  /** `-i/--meshNamespace`: where the installed state is read without `-f`. */
  readonly meshNamespace: string;
}

export async function runVerifyInstall(req: VerifyRequest, deps: { readonly client: ClientFactory }): Promise<CommandOutcome> {
  const fromFiles = req.files.length > 0 ? await renderFlags({ files: req.files, manifests: req.manifests, revision: req.revision }) : undefined;
  const client = await deps.client();
  try {
    let manifests;
    let target: { revision: string; namespace: string };
    let origin: string;
    if (fromFiles) {
      manifests = fromFiles.manifests;
      target = fromFiles;
      origin = req.files.join(', ');
    } else {
      const revision = revisionOf({ revision: req.revision });
      const state = await readInstalledState(client, req.meshNamespace, revision);
      if (!state) {
        throw new InstallError(`no installed state (MeshOperator ${stateName(revision)}) in namespace "${req.meshNamespace}": nothing to verify; pass -f <file> with the installed spec, or -i/-r to name the installation`);
      }
      manifests = await renderSpec(state.spec, await manifestSource(req.manifests));
      target = { revision, namespace: state.spec.namespace ?? req.meshNamespace };
      origin = `MeshOperator ${state.namespace}/${state.name}`;
    }
    const result = await verifyInstallation(client, manifests);
    const lines = result.objects.map((o) => (o.ready ? `${CHECK} ${o.name}` : `${CROSS} ${o.name}: ${o.reason}`));
    const unready = result.objects.filter((o) => !o.ready);
    if (result.ok) {
      lines.push(`${CHECK} ${describeTarget(target)} is installed and verified: all ${result.objects.length} objects of ${origin} are ready`);
      return { stdout: `${lines.join('\n')}\n` };
    }
    return {
      stdout: `${lines.join('\n')}\n`,
      stderr: `error: ${unready.length} of ${result.objects.length} objects of ${describeTarget(target)} are not ready:\n${unready.map((o) => `  ${o.name}: ${o.reason}`).join('\n')}\n`,
      exitCode: 1,
    };
  } finally {
    client.close();
  }
}
