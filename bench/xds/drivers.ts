/**
 * The two client drivers behind one interface: the Go load generator (tools/xds-load, default) and
 * the Node driver (driver.ts, `--driver node`). Both take the commands of protocol.ts and answer
 * with its events; the Go one over stdin/stdout (one JSON object per line), the Node one over the
 * fork IPC channel.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { DriverCommand, DriverEvent } from './protocol.js';

export type DriverKind = 'go' | 'node';

export interface ClientDriver {
  readonly pid: number;
  send(cmd: DriverCommand): void;
  /** The next event of the given kind (others are dropped); rejects on timeout, driver exit or a fatal error. */
  next<E extends DriverEvent['ev']>(ev: E, timeoutMs: number): Promise<Extract<DriverEvent, { ev: E }>>;
  stop(): Promise<void>;
}

/** Children to end when the runner is interrupted. */
export const children = new Set<() => void>();

/** Builds (or finds in the cache) the Go load generator; its path. */
export function goLoadGenerator(repoRoot: string): string {
  const out = execFileSync('bash', [join(repoRoot, 'scripts', 'build-go-tools.sh'), 'xds-load'], { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const line = out.split('\n').find((l) => l.startsWith('xds-load='));
  if (!line) throw new Error(`scripts/build-go-tools.sh printed no xds-load path:\n${out}`);
  return line.slice('xds-load='.length).trim();
}

abstract class ChildDriver implements ClientDriver {
  protected readonly queue: DriverEvent[] = [];
  private waiter: (() => void) | undefined;
  private exitInfo: string | undefined;
  private unregister: () => void = () => undefined;

  protected constructor(protected readonly child: ChildProcess) {
    const kill = (): void => void this.child.kill('SIGKILL');
    children.add(kill);
    this.unregister = () => children.delete(kill);
    this.child.on('exit', (code, signal) => {
      this.exitInfo = `driver exited (code ${code ?? '-'}, signal ${signal ?? '-'})`;
      this.unregister();
      this.waiter?.();
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  abstract send(cmd: DriverCommand): void;

  protected deliver(m: DriverEvent): void {
    this.queue.push(m);
    this.waiter?.();
  }

  async next<E extends DriverEvent['ev']>(ev: E, timeoutMs: number): Promise<Extract<DriverEvent, { ev: E }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.queue.length > 0) {
        const m = this.queue.shift()!;
        if (m.ev === 'fatal') throw new Error(`driver failed: ${m.message}`);
        if (m.ev === ev) return m as Extract<DriverEvent, { ev: E }>;
      }
      if (this.exitInfo) throw new Error(this.exitInfo);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`driver: no '${ev}' within ${timeoutMs} ms`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiter = () => {
          clearTimeout(t);
          r();
        };
      });
      this.waiter = undefined;
    }
  }

  async stop(): Promise<void> {
    if (this.exitInfo) return;
    try {
      this.send({ cmd: 'stop' });
      await this.next('stopped', 10_000);
    } catch {
      // fall through to kill
    }
    if (!this.exitInfo) this.child.kill('SIGKILL');
  }
}

function childEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'NODE_OPTIONS') env[k] = v;
  return env;
}

/** driver.ts in a forked Node process (one process holding every client). */
export class NodeDriver extends ChildDriver {
  constructor(driverJs: string) {
    super(fork(driverJs, [], { env: childEnv(), execArgv: ['--max-old-space-size=4096'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
    this.child.on('message', (m: DriverEvent) => this.deliver(m));
  }

  send(cmd: DriverCommand): void {
    this.child.send(cmd);
  }
}

/** tools/xds-load: JSON lines on stdin and stdout. */
export class GoDriver extends ChildDriver {
  constructor(binary: string) {
    super(spawn(binary, [], { env: childEnv(), stdio: ['pipe', 'pipe', 'inherit'] }));
    const lines = createInterface({ input: this.child.stdout! });
    lines.on('line', (line) => {
      if (line.trim() === '') return;
      try {
        this.deliver(JSON.parse(line) as DriverEvent);
      } catch {
        this.deliver({ ev: 'fatal', message: `unreadable line from xds-load: ${line.slice(0, 200)}` });
      }
    });
  }

  send(cmd: DriverCommand): void {
    this.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
  }
}
