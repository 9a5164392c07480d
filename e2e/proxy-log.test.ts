/**
 * `meshctl proxy-config log`: the proxies' pods are real objects of the local plane (found by name
 * or by `-l`), and each pod's admin port is a local HTTP server standing in for Envoy's `/logging`
 * endpoint (the plane's simulated nodes run no containers, so the port-forward has nothing to reach):
 * the command's admin call is the same HTTP request it makes through the port-forward, aimed at the
 * stand-in. The stand-in keeps levels per logger as Envoy does and refuses an unknown logger.
 *
 * - reading the levels of one proxy and of every proxy `-l` selects (table and JSON);
 * - `--level` with and without a logger, `--reset` (every logger to warning);
 * - refusals: unknown logger or level (before any request), both --level and --reset, a selector
 *   that matches no pod, an unknown pod, a proxy whose admin port refuses a logger.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { httpRequest } from '../src/cli/meshctl/diag/port-forward.js';
import { parseLoggingReply, parseProxyLogLevels, runProxyLog, type ProxyAdminCall, type ProxyLogInput } from '../src/cli/meshctl/diag/run-proxy-config.js';
import type { KubeClient } from '../src/kube/client.js';
import { runMeshctl } from '../test/cli/run-meshctl.js';
import { createNamespace, deleteNamespace, kubeTestEnv } from '../test/kube/helpers.js';

/** A stand-in for one Envoy's admin `/logging`: POST only, `level=` for all, `<logger>=` for one. */
class AdminStandIn {
  readonly requests: string[] = [];
  private readonly levels: Map<string, string>;
  private server?: http.Server;

  constructor(loggers: readonly string[]) {
    this.levels = new Map(loggers.map((l) => [l, 'info']));
  }

  async start(): Promise<number> {
    this.server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://admin');
      this.requests.push(`${req.method} ${url.pathname}${url.search}`);
      if (url.pathname !== '/logging') return void res.writeHead(404).end('invalid path. admin commands are:\n');
      if (req.method !== 'POST') return void res.writeHead(405).end('This endpoint requires POST\n');
      for (const [key, value] of url.searchParams) {
        if (key === 'level') for (const l of this.levels.keys()) this.levels.set(l, value);
        else if (this.levels.has(key)) this.levels.set(key, value);
        else return void res.writeHead(404).end('error: unknown logger name\nusage: /logging?<name>=<level> (change single level)\n');
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`active loggers:\n${[...this.levels].sort(([a], [b]) => a.localeCompare(b)).map(([l, v]) => `  ${l}: ${v}\n`).join('')}`);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  close(): void {
    this.server?.close();
  }
}

let client: KubeClient;
let kubeconfig: string;
let ns: string;
const admins = new Map<string, AdminStandIn>();
const ports = new Map<string, number>();

/** The admin call aimed at the pod's stand-in: the same HTTP request as through a port-forward. */
const call: ProxyAdminCall = (pod, path, options) => {
  const port = ports.get(pod.name);
  if (port === undefined) throw new Error(`no stand-in for ${pod.name}`);
  return httpRequest('127.0.0.1', port, path, { timeoutMs: 5000, ...options });
};

const log = (input: Partial<ProxyLogInput>) => runProxyLog(() => Promise.resolve(client), { namespace: ns, reset: false, output: 'short', ...input }, call);

const run = (argv: string[]) => runMeshctl(argv, { HOME: os.tmpdir(), KUBECONFIG: kubeconfig });

beforeAll(async () => {
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  ns = await createNamespace(client, 'plog');
  for (const name of ['reviews-0', 'reviews-1', 'ratings-0']) {
    await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels: { app: name.replace(/-\d$/, '') } }, spec: { containers: [{ name: 'mesh-proxy', image: 'proxy' }] } });
    // ratings-0's proxy is built without the kafka logger
    const admin = new AdminStandIn(name === 'ratings-0' ? ['admin', 'http', 'upstream'] : ['admin', 'http', 'kafka', 'upstream']);
    admins.set(name, admin);
    ports.set(name, await admin.start());
  }
}, 60_000);

afterAll(async () => {
  for (const a of admins.values()) a.close();
  await deleteNamespace(client, ns);
  client?.close();
}, 60_000);

describe('proxy-config log', () => {
  it('reads the levels of one proxy', async () => {
    const r = await log({ ref: { type: 'pod', name: 'reviews-0', namespace: ns } });
    expect(r.stdout!.trimEnd().split('\n').map((l) => l.split(/\s{2,}/))).toEqual([
      ['PROXY', 'LOGGER', 'LEVEL'],
      [`reviews-0.${ns}`, 'admin', 'info'],
      [`reviews-0.${ns}`, 'http', 'info'],
      [`reviews-0.${ns}`, 'kafka', 'info'],
      [`reviews-0.${ns}`, 'upstream', 'info'],
    ]);
    expect(admins.get('reviews-0')!.requests).toEqual(['POST /logging']);
  });

  it('--level sets one logger, or all without a logger; the proxies of -l all get it', async () => {
    const r = await log({ selector: 'app=reviews', level: 'http:debug,upstream:trace', output: 'json' });
    expect(JSON.parse(r.stdout!)).toEqual({
      [`reviews-0.${ns}`]: { admin: 'info', http: 'debug', kafka: 'info', upstream: 'trace' },
      [`reviews-1.${ns}`]: { admin: 'info', http: 'debug', kafka: 'info', upstream: 'trace' },
    });
    expect(admins.get('reviews-1')!.requests).toEqual(['POST /logging?http=debug', 'POST /logging?upstream=trace', 'POST /logging']);
    expect(admins.get('ratings-0')!.requests).toEqual([]);

    const all = await log({ ref: { type: 'pod', name: 'reviews-1', namespace: ns }, level: 'error', output: 'json' });
    expect(JSON.parse(all.stdout!)).toEqual({ [`reviews-1.${ns}`]: { admin: 'error', http: 'error', kafka: 'error', upstream: 'error' } });
    expect(admins.get('reviews-1')!.requests.slice(-2)).toEqual(['POST /logging?level=error', 'POST /logging']);
  });

  it('--reset sets every logger to warning', async () => {
    const r = await log({ ref: { type: 'pod', name: 'reviews-1', namespace: ns }, reset: true, output: 'json' });
    expect(JSON.parse(r.stdout!)).toEqual({ [`reviews-1.${ns}`]: { admin: 'warning', http: 'warning', kafka: 'warning', upstream: 'warning' } });
    expect(admins.get('reviews-1')!.requests.slice(-2)).toEqual(['POST /logging?level=warning', 'POST /logging']);
  });

  it("a logger the proxy does not have: the proxy's refusal, named", async () => {
    await expect(log({ ref: { type: 'pod', name: 'ratings-0', namespace: ns }, level: 'kafka:debug' })).rejects.toThrow(
      `proxy ratings-0.${ns}: POST /logging?kafka=debug answered HTTP 404: error: unknown logger name`,
    );
  });

  it('reads levels as Envoy words them, and refuses what Envoy does not know', () => {
    expect(parseLoggingReply('active loggers:\n  admin: info\n  conn_handler: warning\n\n')).toEqual({ admin: 'info', conn_handler: 'warning' });
    expect(parseProxyLogLevels('debug, http:trace')).toEqual(['level=debug', 'http=trace']);
    expect(() => parseProxyLogLevels('http:loud')).toThrow('--level: unknown level "loud" in "http:loud" (levels: trace, debug, info, warning, error, critical, off)');
    expect(() => parseProxyLogLevels('htp:debug')).toThrow('--level: unknown logger "htp" in "htp:debug"');
  });

  it.each([
    ['an unknown logger', ['reviews-0', '--level', 'htp:debug'], /^error: --level: unknown logger "htp" in "htp:debug"$/m],
    ['an unknown level', ['reviews-0', '--level', 'loud'], /^error: --level: unknown level "loud" in "loud"/m],
    ['--level with --reset', ['reviews-0', '--level', 'debug', '--reset'], /^error: --reset and --level cannot be combined$/m],
    ['a selector matching no pod', ['-l', 'app=nothing'], /^error: no pod matches app=nothing in namespace plog-/m],
    ['an unknown pod', ['nope-0'], /^error: pod plog-\w+\/nope-0 not found$/m],
    // without the stand-in: the API server's port-forward reaches no container on a simulated node
    ['a pod whose admin port cannot be reached', ['reviews-0'], /^error: cannot reach port 15000 of pod plog-\w+\/reviews-0 through the API server: /m],
  ])('%s ends with a clear message and exit 1', async (_what, args, message) => {
    const before = [...admins.values()].map((a) => a.requests.length);
    const r = await run(['proxy-config', 'log', '-n', ns, ...args]);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(1);
    // nothing reached any proxy
    expect([...admins.values()].map((a) => a.requests.length)).toEqual(before);
  });
});
