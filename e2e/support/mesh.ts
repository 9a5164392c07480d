/**
 * One self-contained end-to-end world per test: Echo backends, a config directory, the daemon and a
 * proxyless client, torn down in reverse order whatever happens. A failure inside the test body is
 * rethrown with the daemon's log tail and the client's stderr appended.
 */
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon, type StartDaemonOptions } from '../../test/support/daemon.js';
import { startBackend, type Backend, type BackendOptions } from './backend.js';
import { startXdsClient, type XdsClient, type XdsClientOptions } from './xds-client.js';
import { tail } from './wait.js';

export type ConfigContent = string | object | ReadonlyArray<object>;

export interface MeshSetup {
  /** Backends to start, by name (the name is what replies carry in `backend`). */
  readonly backends?: Readonly<Record<string, BackendOptions>>;
  /** Config files written before the daemon starts, computed from the started backends. */
  readonly files?: (backends: Readonly<Record<string, Backend>>) => Readonly<Record<string, ConfigContent>>;
  readonly daemon?: Omit<StartDaemonOptions, 'configDir'>;
  /** Options of the client started with the mesh; `false` starts none. */
  readonly client?: Omit<XdsClientOptions, 'xdsAddr'> | false;
}

export interface Mesh {
  readonly dir: ConfigDir;
  readonly daemon: Daemon;
  /** The client started with the mesh (throws if `client: false`). */
  readonly client: XdsClient;
  readonly backends: Readonly<Record<string, Backend>>;
  /** Starts another client against the same daemon; closed with the mesh. */
  newClient(opts?: Omit<XdsClientOptions, 'xdsAddr'>): Promise<XdsClient>;
  /** Daemon log tail and client stderr tails. */
  diagnostics(): string;
}

type Cleanup = () => Promise<unknown> | unknown;

export async function withMesh(setup: MeshSetup, body: (mesh: Mesh) => Promise<void>): Promise<void> {
  const cleanups: Cleanup[] = [];
  const clients: XdsClient[] = [];
  let daemon: Daemon | undefined;
  const diagnostics = (): string => {
    const parts: string[] = [];
    if (daemon) parts.push(`--- daemon logs (tail) ---\n${tail(daemon.logs(), 8000)}`);
    clients.forEach((c, i) => parts.push(`--- xds client ${i + 1} stderr (tail) ---\n${tail(c.stderr(), 3000)}`));
    return parts.join('\n');
  };
  try {
    const backends: Record<string, Backend> = {};
    for (const [name, opts] of Object.entries(setup.backends ?? {})) {
      const b = await startBackend(name, opts);
      backends[name] = b;
      cleanups.push(() => b.stop());
    }
    const dir = await makeConfigDir();
    cleanups.push(() => dir.cleanup());
    for (const [name, content] of Object.entries(setup.files ? setup.files(backends) : {})) await dir.write(name, content);

    const d = await startDaemon({ ...(setup.daemon ?? {}), configDir: dir.path });
    daemon = d;
    cleanups.push(async () => {
      const code = await d.stop();
      if (code !== 0) console.warn(`daemon exited with code ${code}; logs:\n${tail(d.logs(), 4000)}`);
    });

    const newClient = async (opts: Omit<XdsClientOptions, 'xdsAddr'> = {}): Promise<XdsClient> => {
      const c = await startXdsClient({ ...opts, xdsAddr: d.grpcAddr });
      clients.push(c);
      cleanups.push(() => c.close());
      return c;
    };
    const first = setup.client === false ? undefined : await newClient(setup.client ?? {});

    const mesh: Mesh = {
      dir,
      daemon: d,
      get client(): XdsClient {
        if (!first) throw new Error('this mesh was set up without a client');
        return first;
      },
      backends,
      newClient,
      diagnostics,
    };
    try {
      await body(mesh);
    } catch (err) {
      if (err instanceof Error) {
        err.message = `${err.message}\n${diagnostics()}`;
        throw err;
      }
      throw new Error(`${String(err)}\n${diagnostics()}`, { cause: err });
    }
  } finally {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (err) {
        console.warn(`e2e cleanup failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
}
