/** Semantic checks of Telemetry specs. */
import type { Telemetry } from '../../gen/config/schemas.js';
import { type ConfigIssue, Issues, checkLabels, checkMinDuration, checkPercent, checkSelectorXorTargets, checkTargetRefs, join, type ValidationContext } from './common.js';

export function validateTelemetry(spec: Telemetry, path = 'spec', ctx?: ValidationContext): ConfigIssue[] {
  const issues = new Issues();
  checkSelectorXorTargets(issues, path, spec);
  checkTargetRefs(issues, path, spec, ctx);
  checkLabels(issues, join(path, 'selector', 'matchLabels'), spec.selector?.matchLabels);
  (spec.tracing ?? []).forEach((t, i) => {
    const p = join(path, 'tracing', i);
    checkPercent(issues, join(p, 'randomSamplingPercentage'), t.randomSamplingPercentage);
    if ((t.providers?.length ?? 0) > 1) issues.add(join(p, 'providers'), 'only one trace provider is supported');
    for (const [tag, value] of Object.entries(t.customTags ?? {})) {
      if (!value.literal && !value.environment && !value.header) issues.add(join(p, 'customTags', tag), 'a custom tag needs literal, environment or header');
    }
  });
  (spec.metrics ?? []).forEach((m, i) => {
    const p = join(path, 'metrics', i);
    checkMinDuration(issues, join(p, 'reportingInterval'), m.reportingInterval, 1);
    (m.overrides ?? []).forEach((o, j) => {
      for (const [tag, op] of Object.entries(o.tagOverrides ?? {})) {
        const tp = join(p, 'overrides', j, 'tagOverrides', tag);
        const operation = op.operation ?? 'UPSERT';
        if (operation === 'REMOVE' && op.value !== undefined) issues.add(tp, 'REMOVE takes no value');
        if (operation === 'UPSERT' && !op.value) issues.add(tp, 'UPSERT needs a value');
      }
    });
  });
  return issues.list;
}
