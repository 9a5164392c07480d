/**
 * Envoy as the agent's child process: started with the bootstrap the agent wrote, its readiness
 * read from the admin interface (`GET /ready` answers `LIVE`), and stopped gracefully — listeners
 * drained (`POST /drain_listeners?graceful`), the drain duration waited out, then SIGTERM (SIGKILL
 * if it lingers). The binary is a setting (--envoyBinary, PROXY_CONFIG.binaryPath); a binary that
 * does not start is an error naming it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import type { Logger } from 'pino';
import { fetchText } from './status.js';

export interface EnvoyOptions {
  readonly binary: string;
  readonly bootstrapPath: string;
  readonly adminPort: number;
  readonly concurrency: number;
  readonly logLevel: string;
  readonly componentLogLevel: string;
  /** Envoy's own drain time on a hot restart (PROXY_CONFIG.drainDuration), seconds. */
  readonly drainTimeSeconds: number;
  readonly log: Logger;
}

export class EnvoyProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<number> | undefined;
  private stopping = false;

  constructor(private readonly o: EnvoyOptions) {}

  /** Command-line arguments Envoy is started with. */
  args(): string[] {
    const a = ['-c', this.o.bootstrapPath, '--concurrency', String(this.o.concurrency), '-l', this.o.logLevel, '--drain-time-s', String(this.o.drainTimeSeconds), '--drain-strategy', 'immediate'];
    if (this.o.componentLogLevel) a.push('--component-log-level', this.o.componentLogLevel);
    return a;
  }

  /** Starts Envoy; `onExit` hears an exit the agent did not ask for. */
  async start(onExit: (code: number) => void): Promise<void> {
    try {
      await access(this.o.binary, constants.X_OK);
    } catch {
      throw new Error(`--envoyBinary ${this.o.binary}: not an executable file`);
    }
    const child = spawn(this.o.binary, this.args(), { stdio: ['ignore', 'inherit', 'inherit'] });
    this.child = child;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        const c = code ?? (signal ? 128 + (signal === 'SIGKILL' ? 9 : 15) : 1);
        if (!this.stopping) {
          this.o.log.error({ code, signal }, 'Envoy exited');
          onExit(c);
        }
        resolve(c);
      });
      child.once('error', (err) => {
        this.o.log.error(`Envoy did not start: ${err.message}`);
        if (!this.stopping) onExit(1);
        resolve(1);
      });
    });
    this.o.log.info({ pid: child.pid, binary: this.o.binary }, 'Envoy started');
  }

  running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Envoy's own readiness: admin /ready answering 200 `LIVE`. */
  async ready(): Promise<{ ready: boolean; reason: string }> {
    if (!this.running()) return { ready: false, reason: 'envoy: not running' };
    try {
      const r = await fetchText('127.0.0.1', this.o.adminPort, '/ready', 1_000);
      const state = r.body.trim();
      return r.status === 200 && state === 'LIVE' ? { ready: true, reason: 'envoy: LIVE' } : { ready: false, reason: `envoy: ${state || `HTTP ${r.status}`}` };
    } catch (err) {
      return { ready: false, reason: `envoy admin not answering: ${(err as Error).message}` };
    }
  }

  /** Drains listeners, waits `drainMs`, then stops Envoy. Resolves to its exit code. */
  async drainAndStop(drainMs: number): Promise<number> {
    this.stopping = true;
    if (!this.running()) return (await this.exited) ?? 0;
    try {
      const r = await fetchText('127.0.0.1', this.o.adminPort, '/drain_listeners?graceful', 2_000, 'POST');
      this.o.log.info({ status: r.status, drainMs }, 'Envoy listeners draining');
    } catch (err) {
      this.o.log.warn(`drain request failed (${(err as Error).message}); stopping after the drain time anyway`);
    }
    await new Promise((r) => setTimeout(r, drainMs));
    this.child?.kill('SIGTERM');
    const kill = setTimeout(() => this.child?.kill('SIGKILL'), 5_000);
    const code = (await this.exited) ?? 0;
    clearTimeout(kill);
    return code;
  }
}
