/** Shapes of the resolved security policies (docs/adr/0080). */
import type { AuthorizationPolicy, Rule } from '../../gen/config/schemas.js';
import type { ConfigObject } from '../../config/types.js';

export type AuthzAction = 'ALLOW' | 'DENY' | 'AUDIT' | 'CUSTOM';

export interface AuthzPolicy {
  readonly source: ConfigObject<AuthorizationPolicy>;
  readonly namespace: string;
  readonly name: string;
  readonly action: AuthzAction;
  /** `mesh.io/dry-run: "true"`: evaluated and reported, never enforced. */
  readonly dryRun: boolean;
  readonly rules: ReadonlyArray<Rule>;
  /** CUSTOM: the extension provider's name (`provider.name`). */
  readonly provider?: string;
}
