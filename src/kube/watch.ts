/**
 * One watch request: opens `?watch=true` on a collection and hands each event of the
 * newline-delimited JSON stream to a callback. The returned promise settles when the stream
 * ends: resolves on a clean end (server timeout), rejects on a connection error, an HTTP error
 * or a premature close. ERROR events are passed to the callback like any other (the caller
 * decides; 410 Gone there means "list again").
 */
import type { IncomingMessage } from 'node:http';
import type { KubeStatus } from './errors.js';
import type { KubeTransport } from './transport.js';
import type { KubeObject } from './types.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface RawWatchEvent<T extends KubeObject> {
  readonly type: WatchEventType;
  readonly object: T | KubeStatus;
}

export interface WatchRequest {
  /** Collection path, e.g. `/apis/networking.mesh.io/v1/namespaces/ns/virtualservices`. */
  readonly path: string;
  readonly resourceVersion?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly allowWatchBookmarks?: boolean;
  /** The server ends the watch cleanly after this many seconds. */
  readonly timeoutSeconds?: number;
  readonly signal?: AbortSignal;
}

const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** Runs one watch until it ends; `onEvent` runs synchronously for every event in order. */
export async function watchOnce<T extends KubeObject>(
  transport: KubeTransport,
  req: WatchRequest,
  onEvent: (event: RawWatchEvent<T>) => void,
): Promise<void> {
  const q = new URLSearchParams({ watch: 'true' });
  if (req.resourceVersion) q.set('resourceVersion', req.resourceVersion);
  if (req.labelSelector) q.set('labelSelector', req.labelSelector);
  if (req.fieldSelector) q.set('fieldSelector', req.fieldSelector);
  if (req.allowWatchBookmarks) q.set('allowWatchBookmarks', 'true');
  if (req.timeoutSeconds) q.set('timeoutSeconds', String(Math.floor(req.timeoutSeconds)));
  const res = await transport.stream({ method: 'GET', path: `${req.path}?${q.toString()}`, signal: req.signal });
  await consume(res, req.signal, onEvent);
}

function consume<T extends KubeObject>(res: IncomingMessage, signal: AbortSignal | undefined, onEvent: (event: RawWatchEvent<T>) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let buffered = '';
    let done = false;
    const finish = (err?: Error): void => {
      if (done) return;
      done = true;
      if (err) {
        res.destroy();
        reject(err);
      } else resolve();
    };
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      if (done) return;
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line === '') continue;
        let event: RawWatchEvent<T>;
        try {
          event = JSON.parse(line) as RawWatchEvent<T>;
        } catch {
          finish(new Error(`watch: the API server sent a line that is not JSON: ${line.slice(0, 200)}`));
          return;
        }
        try {
          onEvent(event);
        } catch (err) {
          finish(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        if (done) return;
      }
      if (buffered.length > MAX_LINE_BYTES) finish(new Error('watch: an event is larger than 64 MiB'));
    });
    res.on('end', () => {
      if (buffered.trim() !== '') finish(new Error('watch: the stream ended in the middle of an event'));
      else finish();
    });
    res.on('aborted', () => finish(new Error('watch: the connection closed before the watch ended')));
    res.on('error', (err) => finish(signal?.aborted ? abortErr() : err));
    res.on('close', () => {
      if (!res.complete) finish(signal?.aborted ? abortErr() : new Error('watch: the connection closed before the watch ended'));
      else finish();
    });
  });
}

function abortErr(): Error {
  const err = new Error('the watch was aborted');
  err.name = 'AbortError';
  return err;
}
