/**
 * The layer rule (eslint/layers.mjs) as `npm run lint` applies it: an import that goes up a layer
 * is an error naming both folders; one that goes down passes. Linted with ESLint's Node API and the
 * project's own config, as files at the given paths would be.
 */
import { ESLint } from 'eslint';
import { EXCEPTIONS, LAYERS, REPO_ROOT, SEAMS, exceptionConfigs, layerOf, type LayerException } from '../../eslint/layers.mjs';

const eslint = new ESLint({ cwd: REPO_ROOT });
const RULE = 'import-x/no-restricted-paths';

async function layerErrors(filePath: string, code: string, linter = eslint): Promise<string[]> {
  const [result] = await linter.lintText(code, { filePath: `${REPO_ROOT}/${filePath}` });
  expect(result.fatalErrorCount).toBe(0);
  return result.messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
}

describe('the layer rule', () => {
  it('refuses an import from src/model of src/xds (up two layers)', async () => {
    const errors = await layerErrors('src/model/wrong.ts', "import { TypeUrl } from '../xds/types.js';\nexport const t = TypeUrl.Listener;\n");
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('src/model (layer 2) may not import src/xds (layer 4)');
  });

  it('refuses type-only imports, re-exports and dynamic imports that go up', async () => {
    const code = [
      "import type { AggregateRegistry } from '../registry/aggregate.js';",
      "export { DiscoveryServer } from '../xds/ads-server.js';",
      "export const load = () => import('../bootstrap/daemon.js');",
      'export type A = AggregateRegistry;',
      '',
    ].join('\n');
    const errors = await layerErrors('src/model/wrong.ts', code);
    expect(errors.map((e) => /may not import (src\/\w+)/.exec(e)?.[1])).toEqual(['src/registry', 'src/xds', 'src/bootstrap']);
  });

  it('refuses an import from a subfolder into a higher layer', async () => {
    const errors = await layerErrors('src/config/validation/wrong.ts', "import { MeshModel } from '../../model/mesh-model.js';\nexport type M = MeshModel;\n");
    expect(errors).toEqual([expect.stringContaining('src/config (layer 1) may not import src/model (layer 2)')]);
  });

  it('lets a folder import its own layer and the layers below', async () => {
    const code = [
      "import { PushContext } from '../model/push-context.js';",
      "import { ServiceEntryRegistry } from '../registry/service-entry.js';",
      "import type { ConfigStore } from '../config/types.js';",
      "import { getLogger } from '../log/logger.js';",
      "import { TypeUrl } from './types.js';",
      "import { analyze } from '../analysis/analyze.js';",
      'export const all = [PushContext, ServiceEntryRegistry, getLogger, TypeUrl, analyze];',
      'export type S = ConfigStore;',
      '',
    ].join('\n');
    expect(await layerErrors('src/xds/right.ts', code)).toEqual([]);
  });

  it('lets src/cli, the top layer, import anything', async () => {
    expect(await layerErrors('src/cli/right.ts', "import { runDaemon } from '../bootstrap/daemon.js';\nexport const r = runDaemon;\n")).toEqual([]);
  });

  it('places src/controllers above install and below bootstrap', async () => {
    // the installation reconciler calls the install engine; bootstrap wires the controllers
    expect(await layerErrors('src/controllers/installation/right.ts', "import { applyManifests } from '../../install/apply/engine.js';\nexport const a = applyManifests;\n")).toEqual([]);
    expect(await layerErrors('src/bootstrap/right.ts', "import { createDaemonControllers } from '../controllers/daemon-controllers.js';\nexport const b = createDaemonControllers;\n")).toEqual([]);
    expect(await layerErrors('src/install/wrong.ts', "import { reconcileInstallation } from '../controllers/installation/installation.js';\nexport const r = reconcileInstallation;\n")).toEqual([
      expect.stringContaining('src/install (layer 4) may not import src/controllers (layer 5)'),
    ]);
    expect(await layerErrors('src/controllers/wrong.ts', "import { runDaemon } from '../bootstrap/daemon.js';\nexport const r = runDaemon;\n")).toEqual([
      expect.stringContaining('src/controllers (layer 5) may not import src/bootstrap (layer 6)'),
    ]);
  });

  it('places src/ca and src/security below xds, security above ca, and refuses their upward imports', async () => {
    expect(await layerErrors('src/security/right.ts', "import { CertificateAuthority } from '../ca/authority.js';\nimport type { Proxy } from '../model/proxy.js';\nexport const c = CertificateAuthority;\nexport type P = Proxy;\n")).toEqual([]);
    expect(await layerErrors('src/ca/wrong.ts', "import { CertificateService } from '../security/certificate-service.js';\nexport const c = CertificateService;\n")).toEqual([
      expect.stringContaining('src/ca (layer 2) may not import src/security (layer 3)'),
    ]);
    expect(await layerErrors('src/security/wrong.ts', "import { DiscoveryServer } from '../xds/ads-server.js';\nexport const d = DiscoveryServer;\n")).toEqual([
      expect.stringContaining('src/security (layer 3) may not import src/xds (layer 4)'),
    ]);
  });

  it('lets src/xds see only the stream authorizer seam of src/security', async () => {
    expect(await layerErrors('src/xds/right.ts', "import type { StreamAuthorizer } from '../security/stream-authorizer.js';\nexport type A = StreamAuthorizer;\n")).toEqual([]);
    const wrong = ["import { xdsAuthorizer } from '../../security/xds-auth.js';", "import type { Caller } from '../../security/authn.js';", 'export const x = xdsAuthorizer;', 'export type C = Caller;', ''].join('\n');
    expect(await layerErrors('src/xds/envoy/wrong.ts', wrong)).toEqual([
      expect.stringContaining('src/xds may import of src/security only its seam (stream-authorizer.ts)'),
      expect.stringContaining('src/xds may import of src/security only its seam (stream-authorizer.ts)'),
    ]);
    for (const s of SEAMS) expect(layerOf(s.to)!).toBeLessThan(layerOf(s.from)!);
  });

  it('refuses the upward imports the controllers move removed (no exception is left for them)', async () => {
    expect(EXCEPTIONS).toEqual([]);
    expect(await layerErrors('src/install/run-x.ts', "import { CliError } from '../cli/runner.js';\nexport const e = CliError;\n")).toHaveLength(1);
    expect(await layerErrors('src/config/gateway-api/status.ts', "import { Controller } from '../../controllers/runtime/controller.js';\nexport const c = Controller;\n")).toHaveLength(1);
  });

  it('allows an exception only where it is listed', async () => {
    // Exceptions are appended to the project's config, as layerConfigs() does with EXCEPTIONS.
    const exceptions: LayerException[] = [
      { from: 'install', to: 'cli', why: 'an example' },
      { from: 'config/gateway-api/status.ts', to: 'controllers', why: 'an example' },
    ];
    const excepted = new ESLint({ cwd: REPO_ROOT, overrideConfig: exceptionConfigs(exceptions) });
    expect(await layerErrors('src/install/run-x.ts', "import { CliError } from '../cli/runner.js';\nexport const e = CliError;\n", excepted)).toEqual([]);
    // the exception is for cli, not for other higher folders
    expect(await layerErrors('src/install/run-x.ts', "import { runDaemon } from '../bootstrap/daemon.js';\nexport const r = runDaemon;\n", excepted)).toHaveLength(1);
    // a file exception covers that file only
    const status = "import { Controller } from '../../controllers/runtime/controller.js';\nexport const c = Controller;\n";
    expect(await layerErrors('src/config/gateway-api/status.ts', status, excepted)).toEqual([]);
    expect(await layerErrors('src/config/gateway-api/other.ts', status, excepted)).toHaveLength(1);
  });

  it('lists each exception with the change that removes it, towards a listed folder', () => {
    for (const e of EXCEPTIONS) {
      expect(e.why).not.toBe('');
      expect(LAYERS.flat()).toContain(e.to);
    }
  });
});
