/**
 * The JWT flow end to end (docs/adr/0100): a key-set server on loopback over HTTPS with a
 * certificate of its own (openssl), tokens signed with its keys (node:crypto), a running daemon
 * that fetches the key set itself (trusting the server's CA through NODE_EXTRA_CA_CERTS) and
 * inlines it into the jwt_authn filter of the sidecar's inbound listener. The sidecar's whole
 * configuration passes xds-validate (Envoy's validation rules and references); good, expired,
 * wrong-issuer and wrong-audience tokens are then evaluated against the generated filters by
 * tools/jwt-check (go-jose doing the verification, jwt_authn's documented requirement semantics
 * around it, then the chain's RBAC filters over the verified payload jwt_authn writes to dynamic
 * metadata): the AuthorizationPolicy's request principal and `request.auth.claims[groups]` decide. A rotated key set reaches the proxy through the normal push at the next refresh; an
 * unreachable jwksUri is logged and counted, and its issuer fails closed.
 */
import { execFile } from 'node:child_process';
import { createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { goToolPath, GO_TOOL_BUILD_TIMEOUT_MS, runXdsValidate, echoSidecarValidateArgs } from '../support/go-tools.js';
import { openssl } from '../support/openssl.js';

const LISTENER = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const ISSUER = 'https://issuer.test';

interface Report {
  ok: boolean;
  errors: Array<{ type: string; name: string; message: string }>;
  dump?: Record<string, Record<string, unknown>>;
}

interface Provider {
  issuer: string;
  audiences?: string[];
  local_jwks?: { inline_string: string };
}
interface JwtConfig {
  providers: Record<string, Provider>;
}

interface Signer {
  readonly kid: string;
  readonly privateKey: KeyObject;
  readonly jwk: Record<string, unknown>;
}

function signer(): Signer {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomUUID();
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

function token(s: Signer, claims: Record<string, unknown>): string {
  const now = Math.floor(Date.now() / 1000);
  const body = `${b64({ alg: 'RS256', typ: 'JWT', kid: s.kid })}.${b64({ iat: now, exp: now + 600, ...claims })}`;
  const sig = createSign('RSA-SHA256').update(body).sign(s.privateKey).toString('base64url');
  return `${body}.${sig}`;
}

const RULES = (port: number, deadPort: number): string => `
apiVersion: security.mesh.io/v1
kind: RequestAuthentication
metadata: { name: echo-jwt, namespace: default }
spec:
  selector: { matchLabels: { app: echo } }
  jwtRules:
    - issuer: ${ISSUER}
      audiences: [echo]
      jwksUri: https://127.0.0.1:${port}/keys
    - issuer: https://gone.test
      jwksUri: https://127.0.0.1:${deadPort}/keys
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: alice-only, namespace: default }
spec:
  selector: { matchLabels: { app: echo } }
  rules:
    - from: [{ source: { requestPrincipals: ["${ISSUER}/alice"] } }]
      when: [{ key: "request.auth.claims[groups]", values: [dev] }]
`;

describe('JWT flow: a JWKS server over HTTPS, the daemon inlining its keys, tokens evaluated against the generated filter', () => {
  let work: string;
  let server: Server;
  let keys: Signer[];
  let fetches = 0;
  let config: ConfigDir;
  let daemon: Daemon;
  let validateBin: string;
  let checkBin: string;
  let port: number;
  let deadPort: number;

  beforeAll(async () => {
    [validateBin, checkBin] = await Promise.all([goToolPath('xds-validate'), goToolPath('jwt-check')]);
    work = await mkdtemp(join(tmpdir(), 'mesh-jwt-flow-'));
    // a CA of the server's own and a serving certificate for 127.0.0.1
    const f = (n: string): string => join(work, n);
    const ok = async (args: string[]): Promise<void> => {
      const r = await openssl(args);
      if (r.code !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`);
    };
    await ok(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=jwks test CA']);
    await ok(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('srv.key'), '-out', f('srv.csr'), '-subj', '/CN=127.0.0.1']);
    await ok(['x509', '-req', '-in', f('srv.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('srv.pem'), '-days', '2', '-extfile', await writeExt(f('ext.cnf'))]);
    keys = [signer()];
    server = createServer({ key: await readFile(f('srv.key')), cert: await readFile(f('srv.pem')) }, (req, res) => {
      fetches++;
      if (req.url !== '/keys') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: keys.map((k) => k.jwk) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    deadPort = await freePort(); // nothing listens there
    config = await makeConfigDir();
    await config.write('jwt.yaml', RULES(port, deadPort));
    daemon = await startDaemon({ configDir: config.path, env: { NODE_EXTRA_CA_CERTS: f('ca.pem'), DISC_JWT_PUB_KEY_REFRESH_INTERVAL: '2s' } });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await config?.cleanup();
    await new Promise((resolve) => server?.close(resolve));
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function sidecarConfig(): Promise<Report> {
    return runXdsValidate<Report>(validateBin, echoSidecarValidateArgs(daemon.grpcAddr));
  }

  /** The HTTP filters of the HTTP chain of port 19080 (protojson, as the validator decoded it). */
  function httpFilters(r: Report): Array<{ name: string; typed_config: unknown }> {
    const inbound = r.dump![LISTENER].virtualInbound as { filter_chains: Array<{ filter_chain_match?: { destination_port?: number }; filters: Array<{ typed_config: { http_filters?: Array<{ name: string; typed_config: unknown }> } }> }> };
    const chain = inbound.filter_chains.find((c) => c.filter_chain_match?.destination_port === 19080)!;
    return chain.filters[0].typed_config.http_filters ?? [];
  }

  /** The jwt_authn filter of that chain. */
  function jwtFilter(r: Report): JwtConfig | undefined {
    return httpFilters(r).find((h) => h.name === 'envoy.filters.http.jwt_authn')?.typed_config as JwtConfig | undefined;
  }

  /** The RBAC filters of that chain, in their order, as jwt-check takes them. */
  function rbacFilters(r: Report): Array<{ name: string; config: unknown }> {
    return httpFilters(r)
      .filter((h) => h.name.startsWith('envoy.filters.http.rbac'))
      .map((h) => ({ name: h.name, config: h.typed_config }));
  }

  const inlineKids = (p: Provider | undefined): string[] => (JSON.parse(p?.local_jwks?.inline_string ?? '{"keys":[]}') as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid);

  type CheckRequest = { name: string; headers?: Record<string, string>; method?: string; path?: string; source_ip?: string; destination_port?: number };
  async function check(cfg: JwtConfig, requests: CheckRequest[], rbac?: Array<{ name: string; config: unknown }>): Promise<Record<string, { status: number; reason?: string; payload?: Record<string, unknown> }>> {
    return new Promise((resolve, reject) => {
      const child = execFile(checkBin, [], { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`jwt-check: ${stderr || err.message}`)) : resolve(JSON.parse(stdout) as never)));
      child.stdin!.end(JSON.stringify({ config: cfg, ...(rbac ? { rbac } : {}), requests }));
    });
  }

  it('inlines the fetched key set, passes Envoy validation, and admits exactly the tokens the rule says', async () => {
    const report = await eventually(
      'the inbound jwt_authn filter to hold the key set the server serves',
      async () => {
        const r = await sidecarConfig();
        return inlineKids(jwtFilter(r)?.providers['default/echo-jwt/0'])[0] === keys[0].kid ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, diagnostics: () => daemon.logs().slice(-4000) },
    );
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const cfg = jwtFilter(report)!;
    const good = cfg.providers['default/echo-jwt/0'];
    expect(good.issuer).toBe(ISSUER);
    expect(good.audiences).toEqual(['echo']);
    expect(JSON.parse(good.local_jwks!.inline_string)).toEqual({ keys: [keys[0].jwk] });

    const other = signer();
    const bearer = (t: string): Record<string, string> => ({ authorization: `Bearer ${t}` });
    const now = Math.floor(Date.now() / 1000);
    const http = { method: 'GET', path: '/echo', source_ip: '10.1.2.3', destination_port: 19080 };
    const requests: CheckRequest[] = [
      { name: 'good', headers: bearer(token(keys[0], { iss: ISSUER, sub: 'alice', aud: 'echo', groups: ['dev'] })) },
      { name: 'good-string-group', headers: bearer(token(keys[0], { iss: ISSUER, sub: 'alice', aud: 'echo', groups: 'dev' })) },
      { name: 'other-group', headers: bearer(token(keys[0], { iss: ISSUER, sub: 'alice', aud: 'echo', groups: ['ops'] })) },
      { name: 'no-group', headers: bearer(token(keys[0], { iss: ISSUER, sub: 'alice', aud: 'echo' })) },
      { name: 'bob', headers: bearer(token(keys[0], { iss: ISSUER, sub: 'bob', aud: 'echo', groups: ['dev'] })) },
      { name: 'expired', headers: bearer(token(keys[0], { iss: ISSUER, sub: 'alice', aud: 'echo', groups: ['dev'], iat: now - 7200, exp: now - 3600 })) },
      { name: 'wrong-issuer', headers: bearer(token(keys[0], { iss: 'https://evil.test', sub: 'alice', aud: 'echo', groups: ['dev'] })) },
      { name: 'wrong-audience', headers: bearer(token(keys[0], { iss: ISSUER, sub: 'alice', aud: 'other', groups: ['dev'] })) },
      { name: 'foreign-key', headers: bearer(token(other, { iss: ISSUER, sub: 'alice', aud: 'echo', groups: ['dev'] })) },
      { name: 'gone-issuer', headers: bearer(token(other, { iss: 'https://gone.test', sub: 'alice', groups: ['dev'] })) },
      { name: 'no-token' },
    ].map((r) => ({ ...http, ...r }));

    // jwt_authn alone: authentication only
    const authn = await check(cfg, requests);
    expect(authn.good).toEqual(expect.objectContaining({ status: 200, payload: expect.objectContaining({ iss: ISSUER, sub: 'alice', groups: ['dev'] }) }));
    expect(authn.expired).toEqual(expect.objectContaining({ status: 401, reason: expect.stringContaining('expired') }));
    expect(authn['wrong-issuer'].status).toBe(401);
    expect(authn['wrong-audience']).toEqual(expect.objectContaining({ status: 401, reason: expect.stringContaining('Audiences') }));
    expect(authn['foreign-key'].status).toBe(401);
    // the unreachable jwksUri: its issuer fails closed
    expect(authn['gone-issuer'].status).toBe(401);
    // no token passes authentication; authorization decides
    expect(authn['no-token']).toEqual({ status: 200, reason: 'no token' });

    // jwt_authn then the chain's RBAC filters: what RequestAuthentication + AuthorizationPolicy say
    const rbac = rbacFilters(report);
    expect(rbac.map((f) => f.name)).toEqual(['envoy.filters.http.rbac.allow']);
    const results = await check(cfg, requests, rbac);
    const statuses = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.status]));
    expect(statuses).toEqual({
      good: 200,
      'good-string-group': 200,
      'other-group': 403,
      'no-group': 403,
      bob: 403,
      expired: 401,
      'wrong-issuer': 401,
      'wrong-audience': 401,
      'foreign-key': 401,
      'gone-issuer': 401,
      'no-token': 403,
    });
    expect(results['no-token'].reason).toContain('RBAC: access denied');
    const authz = JSON.stringify(report.dump![LISTENER].virtualInbound);
    expect(authz).toContain('envoy.filters.http.rbac.allow');
    expect(authz.indexOf('envoy.filters.http.jwt_authn')).toBeLessThan(authz.indexOf('envoy.filters.http.rbac.allow'));
  }, 120_000);

  it('logs and counts the unreachable jwksUri and the successful fetches', async () => {
    const dead = `https://127.0.0.1:${deadPort}/keys`;
    await eventually('the failed fetch to be logged', () => daemon.logs().includes(`jwks: fetching ${dead} failed`), { timeoutMs: 30_000, intervalMs: 200 });
    expect(daemon.logs()).toContain('providers with this jwksUri reject every token of their issuer until a fetch succeeds');
    expect(await daemon.metric('disc_jwks_resolver_network_fetch_fail_total')).toBeGreaterThanOrEqual(1);
    expect(await daemon.metric('disc_jwks_resolver_network_fetch_success_total')).toBeGreaterThanOrEqual(1);
    // the daemon keeps serving every proxy
    expect(await daemon.ready()).toBe(true);
  }, 60_000);

  it('pushes a rotated key set at the next refresh: old-key tokens fail, new-key tokens pass', async () => {
    const before = fetches;
    const old = keys[0];
    const rotated = signer();
    keys = [rotated];
    const report = await eventually(
      'the proxy to receive the rotated key set',
      async () => {
        const r = await sidecarConfig();
        return inlineKids(jwtFilter(r)?.providers['default/echo-jwt/0'])[0] === rotated.kid ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, diagnostics: () => daemon.logs().slice(-4000) },
    );
    expect(fetches).toBeGreaterThan(before);
    expect(report.ok).toBe(true);
    const results = await check(jwtFilter(report)!, [
      { name: 'new', headers: { authorization: `Bearer ${token(rotated, { iss: ISSUER, sub: 'alice', aud: 'echo' })}` } },
      { name: 'old', headers: { authorization: `Bearer ${token(old, { iss: ISSUER, sub: 'alice', aud: 'echo' })}` } },
    ]);
    expect(results.new.status).toBe(200);
    expect(results.old.status).toBe(401);
  }, 120_000);
});

async function writeExt(path: string): Promise<string> {
  await writeFile(path, 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  return path;
}
