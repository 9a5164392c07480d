/** `mesh-discovery discovery`: runs the daemon until SIGINT/SIGTERM, then stops within --shutdownDuration. */
import type { DaemonEnv } from '../config/daemon-env.js';
import type { DiscoveryOptions, RunDiscovery } from '../config/discovery-flags.js';
import { closeLogging, configureLogging, getLogger } from '../log/logger.js';
import { startDaemon } from './daemon.js';
import { daemonConfigFrom } from './from-options.js';

export const runDiscovery: RunDiscovery = async (opts: DiscoveryOptions, env: DaemonEnv): Promise<void> => {
  const startedAt = Date.now() - Math.round(process.uptime() * 1000);
  configureLogging(opts.log);
  const cfg = daemonConfigFrom(opts, env);
  const logs = { main: getLogger('default'), ads: getLogger('ads'), model: getLogger('model'), source: getLogger('source') };
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon(cfg, logs, startedAt);
  } catch (err) {
    // one line, no stack (a port in use, a missing directory): the CLI prints it and exits
    const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw Object.assign(new Error(`mesh-discovery did not start: ${first}`), { exitCode: 1 });
  }
  await new Promise<void>((resolve) => {
    const onSignal = (sig: NodeJS.Signals): void => {
      logs.main.info({ signal: sig }, 'signal received');
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  const deadline = setTimeout(() => {
    logs.main.error({ shutdownDuration: cfg.shutdownMs }, 'graceful shutdown took too long; exiting');
    process.exit(1);
  }, cfg.shutdownMs + 1000);
  deadline.unref();
  await daemon.stop();
  await closeLogging();
};
