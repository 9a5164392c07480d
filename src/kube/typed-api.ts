/**
 * client-node's generated API clients (CoreV1Api, AppsV1Api, ...) over a KubeClient's transport, so
 * their calls share its rate limit, credentials and connections. The product itself calls the API
 * through KubeClient's generic methods; importing this module loads all of client-node (about
 * 25 MB of heap), so only code that wants the typed clients pays for it (docs/adr/0130).
 */
import {
  ResponseContext,
  SelfDecodingBody,
  ServerConfiguration,
  createConfiguration,
  wrapHttpLibrary,
  type ApiType,
  type RequestContext,
} from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { KubeApiError } from './errors.js';

type ApiConfiguration = ReturnType<typeof createConfiguration>;
export type ApiConstructor<T extends ApiType> = new (config: ApiConfiguration) => T;

interface Typed {
  readonly config: ApiConfiguration;
  readonly apis: Map<ApiConstructor<ApiType>, ApiType>;
}
const perClient = new WeakMap<KubeClient, Typed>();

/** A typed API client (`typedApi(client, CoreV1Api)`) whose requests go through `client`. Cached per client and class. */
export function typedApi<T extends ApiType>(client: KubeClient, ctor: ApiConstructor<T>): T {
  let typed = perClient.get(client);
  if (!typed) {
    const base = client.transport.url('').href.replace(/\/$/, '');
    typed = {
      config: createConfiguration({ baseServer: new ServerConfiguration(base, {}), httpApi: wrapHttpLibrary({ send: (ctx) => send(client, ctx) }), authMethods: {} }),
      apis: new Map(),
    };
    perClient.set(client, typed);
  }
  let api = typed.apis.get(ctor as ApiConstructor<ApiType>) as T | undefined;
  if (!api) {
    api = new ctor(typed.config);
    typed.apis.set(ctor as ApiConstructor<ApiType>, api);
  }
  return api;
}

async function send(client: KubeClient, ctx: RequestContext): Promise<ResponseContext> {
  const url = new URL(ctx.getUrl());
  const prefix = client.transport.url('').href.replace(/\/$/, '');
  const path = url.href.startsWith(prefix) ? url.href.slice(prefix.length) : url.pathname + url.search;
  const body = ctx.getBody();
  if (body !== undefined && typeof body !== 'string') throw new Error('Kubernetes client: only string request bodies are supported');
  const res = await client.transport.send({ method: ctx.getHttpMethod(), path, headers: ctx.getHeaders(), body, signal: ctx.getSignal() });
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  return new ResponseContext(res.status, headers, new SelfDecodingBody(Promise.resolve(res.body)));
}

/** The KubeApiError of a failed call of client-node's generated clients (ApiException), if it is one. */
export function fromApiException(err: unknown, method = 'REQUEST', path = ''): KubeApiError | undefined {
  if (err instanceof KubeApiError) return err;
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; body?: unknown };
  if (typeof e.code !== 'number' || e.code < 100) return undefined;
  let body = e.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      // keep the text
    }
  }
  return KubeApiError.fromResponse(method, path, e.code, body);
}
