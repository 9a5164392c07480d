/**
 * Which webhook configurations a daemon keeps the caBundle of: INJECTION_WEBHOOK_CONFIG_NAME's
 * default means the daemon's own revision's configuration (docs/adr/0146).
 */
import { parseDiscoveryArgs } from '../../src/config/discovery-flags.js';
import { daemonConfigFrom } from '../../src/bootstrap/from-options.js';

function webhooksOf(env: Record<string, string>): { injectionConfigName: string; validationConfigName: string } {
  const { options, env: parsed } = parseDiscoveryArgs(['--grpcAddr', '127.0.0.1:0', '--monitoringAddr', '127.0.0.1:0'], env);
  return daemonConfigFrom(options, parsed).webhooks;
}

describe('the mutating configuration meshd patches', () => {
  it('is mesh-sidecar-injector for the default revision', () => {
    expect(webhooksOf({}).injectionConfigName).toBe('mesh-sidecar-injector');
    expect(webhooksOf({ REVISION: 'default' }).injectionConfigName).toBe('mesh-sidecar-injector');
  });

  it('is mesh-sidecar-injector-<revision> for a revision, as meshctl install --revision names it', () => {
    expect(webhooksOf({ REVISION: 'canary' }).injectionConfigName).toBe('mesh-sidecar-injector-canary');
  });

  it('is INJECTION_WEBHOOK_CONFIG_NAME when it names another configuration, and none when it is empty', () => {
    expect(webhooksOf({ REVISION: 'canary', INJECTION_WEBHOOK_CONFIG_NAME: 'my-injector' }).injectionConfigName).toBe('my-injector');
    expect(webhooksOf({ REVISION: 'canary', INJECTION_WEBHOOK_CONFIG_NAME: '' }).injectionConfigName).toBe('');
  });
});
