/**
 * `--profile` (docs/adr/0062): CPU profiles and heap snapshots of the running daemon over HTTP,
 * taken with Node's inspector in-process (node:inspector; no debugger port is opened). Served under
 * `/debug/pprof/` on the ControlZ listener (localhost by default):
 *
 *   GET /debug/pprof/                      an index of what is here
 *   GET /debug/pprof/profile?seconds=N     a CPU profile over N seconds (default 30, at most 300),
 *                                          as a `.cpuprofile` (Chrome DevTools, VS Code, speedscope)
 *   GET /debug/pprof/heap                  a heap snapshot (`.heapsnapshot`, Chrome DevTools Memory)
 *
 * One capture at a time (409 while one runs). A heap snapshot stops the daemon while V8 writes it
 * (about a second per 100 MB of heap): take one when a pause is acceptable.
 */
import { Session } from 'node:inspector/promises';
import type { HttpReply } from './http.js';

export const MAX_PROFILE_SECONDS = 300;
export const DEFAULT_PROFILE_SECONDS = 30;

export class Profiler {
  private busy: string | undefined;

  /** Parses `seconds` (1..MAX_PROFILE_SECONDS); throws an Error naming the parameter. */
  static seconds(text: string | null): number {
    if (text === null || text === '') return DEFAULT_PROFILE_SECONDS;
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0 || n > MAX_PROFILE_SECONDS) throw new Error(`seconds: expected a number of seconds in (0, ${MAX_PROFILE_SECONDS}], got ${JSON.stringify(text)}`);
    return n;
  }

  async cpuProfile(seconds: number): Promise<HttpReply> {
    return this.exclusive('a CPU profile', async (session) => {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      const { profile } = await session.post('Profiler.stop');
      await session.post('Profiler.disable');
      return file(`meshd-${stamp()}.cpuprofile`, 'application/json', Buffer.from(JSON.stringify(profile)));
    });
  }

  async heapSnapshot(): Promise<HttpReply> {
    return this.exclusive('a heap snapshot', async (session) => {
      const chunks: string[] = [];
      session.on('HeapProfiler.addHeapSnapshotChunk', (m) => chunks.push(m.params.chunk));
      await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      return file(`meshd-${stamp()}.heapsnapshot`, 'application/json', Buffer.from(chunks.join('')));
    });
  }

  private async exclusive(what: string, fn: (session: Session) => Promise<HttpReply>): Promise<HttpReply> {
    if (this.busy) return { status: 409, body: { error: `${this.busy} is being taken; try again when it is done` } };
    this.busy = what;
    const session = new Session();
    session.connect();
    try {
      return await fn(session);
    } finally {
      session.disconnect();
      this.busy = undefined;
    }
  }
}

const stamp = (): string => new Date().toISOString().replace(/[:.]/g, '-');

function file(name: string, contentType: string, body: Buffer): HttpReply {
  return { contentType, body, headers: { 'content-disposition': `attachment; filename="${name}"` } };
}

export const PPROF_INDEX = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>meshd profiling</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;color:#1d2330}code{background:#eef1f6;padding:0 .3em;border-radius:3px}</style></head>
<body><h1>meshd profiling</h1>
<ul>
<li><a href="/debug/pprof/profile?seconds=${DEFAULT_PROFILE_SECONDS}">CPU profile over ${DEFAULT_PROFILE_SECONDS} s</a> (<code>?seconds=N</code>, at most ${MAX_PROFILE_SECONDS}): a <code>.cpuprofile</code> for Chrome DevTools (Performance), VS Code or speedscope.</li>
<li><a href="/debug/pprof/heap">Heap snapshot</a>: a <code>.heapsnapshot</code> for Chrome DevTools (Memory). The daemon pauses while it is written.</li>
</ul>
<p><a href="/">Back to ControlZ</a></p></body></html>
`;
