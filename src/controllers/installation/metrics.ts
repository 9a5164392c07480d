/**
 * Metrics of the operator controller, named exactly as the spec's table "Metrics added by the
 * operator controller" (Sum → counter, LastValue → gauge). One registry per controller, so that
 * tests can run several controllers in one process.
 *
 * Labels: `component` on the render metrics, `kind` on the resource metrics; the CR metrics have
 * none. `legacy_path_translation_total` stays 0: the install API has no legacy paths to translate.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

export function createOperatorMetrics(opts: { readonly defaultMetrics?: boolean; readonly version?: string } = {}) {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  const r = [registry];
  const m = {
    registry,
    cacheFlush: new Counter({ name: 'cache_flush_total', help: 'Operator cache flushes.', registers: r }),
    crDeletion: new Counter({ name: 'cr_deletion_total', help: 'Operator CRs deleted.', registers: r }),
    crMergeFailure: new Counter({ name: 'cr_merge_failure_total', help: 'Operator CR merge failures.', registers: r }),
    crValidationError: new Counter({ name: 'cr_validation_error_total', help: 'Operator CR validation failures.', registers: r }),
    getCrError: new Counter({ name: 'get_cr_error_total', help: 'Failed fetches of the CR from the API server.', registers: r }),
    legacyPathTranslation: new Counter({ name: 'legacy_path_translation_total', help: 'Translations of a legacy API path.', registers: r }),
    manifestPatchError: new Counter({ name: 'manifest_patch_error_total', help: 'Failed patch overlays.', registers: r }),
    manifestRenderError: new Counter({ name: 'manifest_render_error_total', help: 'Errors rendering the output manifest.', registers: r }),
    ownedResource: new Gauge({ name: 'owned_resource_total', help: 'Resources currently owned by the operator.', registers: r }),
    renderManifest: new Counter({ name: 'render_manifest_total', help: 'Component manifests rendered.', labelNames: ['component'], registers: r }),
    resourceCreation: new Counter({ name: 'resource_creation_total', help: 'Resources created by the operator.', labelNames: ['kind'], registers: r }),
    resourceDeletion: new Counter({ name: 'resource_deletion_total', help: 'Resources deleted.', labelNames: ['kind'], registers: r }),
    resourcePrune: new Counter({ name: 'resource_prune_total', help: 'Resources pruned.', labelNames: ['kind'], registers: r }),
    resourceUpdate: new Counter({ name: 'resource_update_total', help: 'Resources updated.', labelNames: ['kind'], registers: r }),
    version: new Gauge({ name: 'version', help: 'Version of the operator binary.', labelNames: ['version'], registers: r }),
  };
  m.version.set({ version: opts.version ?? 'unknown' }, 1);
  return m;
}

export type OperatorMetrics = ReturnType<typeof createOperatorMetrics>;
