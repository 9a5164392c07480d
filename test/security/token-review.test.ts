/**
 * The TokenReview authenticator against the local plane's real kube-apiserver: tokens from the
 * TokenRequest API and a legacy token from the token controller.
 */
import { KubeClient } from '../../src/kube/client.js';
import { AuthError } from '../../src/security/authn.js';
import { TokenReviewAuthenticator, type TokenReviewOptions } from '../../src/security/token-review.js';
import { ClientCertificateAuthenticator } from '../../src/security/client-cert.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';
import { requestToken } from '../../e2e/support/workload.js';
import { eventually } from '../support/eventually.js';

let env: KubeTestEnv;
let ns: string;
let reviews = 0;
let client: KubeClient;

beforeAll(async () => {
  env = await kubeTestEnv();
  ns = await createNamespace(env.client, 'tokenreview');
  for (const sa of ['echo', 'legacy']) await env.client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: ns } });
  client = (await KubeClient.create({ kubeconfig: env.cluster.kubeconfig, qps: 0, onRequest: (i) => void (i.method === 'POST' && reviews++) })).client;
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  client?.close();
  await deleteNamespace(env.client, ns);
  env.client.close();
});

const OPTS: TokenReviewOptions = { audiences: ['mesh-ca'], jwtPolicy: 'third-party-jwt', requireThirdParty: false, trustDomain: () => 'cluster.local' };
const creds = (token: string) => ({ authorization: [`Bearer ${token}`] });

async function refusalOf(a: TokenReviewAuthenticator, token: string): Promise<AuthError> {
  try {
    await a.authenticate(creds(token));
  } catch (err) {
    if (err instanceof AuthError) return err;
    throw err;
  }
  throw new Error('accepted');
}

describe('TokenReview authentication', () => {
  it('a token for mesh-ca is the service account; concurrent and later uses share one review', async () => {
    const a = new TokenReviewAuthenticator(client, OPTS);
    const token = await requestToken(env.creds, ns, 'echo', ['mesh-ca']);
    const before = reviews;
    const callers = await Promise.all(Array.from({ length: 20 }, () => a.authenticate(creds(token))));
    expect(callers[0]).toMatchObject({ identity: { trustDomain: 'cluster.local', namespace: ns, serviceAccount: 'echo' }, method: 'token' });
    await a.authenticate(creds(token));
    expect(reviews - before).toBe(1);
    expect(a.cacheStats.entries).toBe(1);
  });

  it('the cache stays within its byte bound, dropping the oldest results', async () => {
    const a = new TokenReviewAuthenticator(client, { ...OPTS, maxCacheBytes: 1000 });
    for (let i = 0; i < 6; i++) await a.authenticate(creds(await requestToken(env.creds, ns, 'echo', ['mesh-ca'])));
    expect(a.cacheStats.bytes).toBeLessThanOrEqual(1000);
    expect(a.cacheStats.entries).toBeLessThan(6);
  });

  it('a token past its expiry is refused even while a review of it is cached', async () => {
    let now = Date.now();
    const a = new TokenReviewAuthenticator(client, { ...OPTS, now: () => now, maxCacheMs: 3600_000 });
    const token = await requestToken(env.creds, ns, 'echo', ['mesh-ca'], 600);
    await a.authenticate(creds(token));
    now += 11 * 60_000;
    expect((await refusalOf(a, token)).reason).toBe('expired');
  });

  it('TOKEN_ISSUER and AUDIENCE are required of the reviewed token', async () => {
    const token = await requestToken(env.creds, ns, 'echo', ['mesh-ca', 'extra']);
    const issuer = new TokenReviewAuthenticator(client, { ...OPTS, issuer: 'https://other.issuer.example' });
    expect(await refusalOf(issuer, token)).toMatchObject({ reason: 'issuer' });
    const rightIssuer = new TokenReviewAuthenticator(client, { ...OPTS, issuer: 'https://kubernetes.default.svc.cluster.local' });
    await expect(rightIssuer.authenticate(creds(token))).resolves.toMatchObject({ method: 'token' });
    const audience = new TokenReviewAuthenticator(client, { ...OPTS, audience: 'missing' });
    expect(await refusalOf(audience, token)).toMatchObject({ reason: 'audience' });
    await expect(new TokenReviewAuthenticator(client, { ...OPTS, audience: 'extra' }).authenticate(creds(token))).resolves.toBeDefined();
  });

  it('JWT_POLICY=first-party-jwt reviews without audiences: a token for the API server passes, one for mesh-ca does not', async () => {
    const a = new TokenReviewAuthenticator(client, { ...OPTS, jwtPolicy: 'first-party-jwt' });
    const apiToken = await requestToken(env.creds, ns, 'echo', ['https://kubernetes.default.svc.cluster.local']);
    await expect(a.authenticate(creds(apiToken))).resolves.toMatchObject({ identity: { serviceAccount: 'echo' } });
    expect((await refusalOf(a, await requestToken(env.creds, ns, 'echo', ['mesh-ca']))).reason).toBe('audience');
  });

  it('a legacy token without audience: accepted unless REQUIRE_3P_TOKEN=true', async () => {
    await env.client.create({ apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token', metadata: { name: 'legacy-token', namespace: ns, annotations: { 'kubernetes.io/service-account.name': 'legacy' } } } as never);
    const token = await eventually(
      'the token controller to fill the legacy token',
      async () => {
        const s = await env.client.get<{ metadata?: object; data?: { token?: string } }>({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'legacy-token' });
        return s.data?.token ? Buffer.from(s.data.token, 'base64').toString('utf8') : undefined;
      },
      { timeoutMs: 30_000, retryErrors: true },
    );
    await expect(new TokenReviewAuthenticator(client, OPTS).authenticate(creds(token))).resolves.toMatchObject({ identity: { serviceAccount: 'legacy' } });
    expect((await refusalOf(new TokenReviewAuthenticator(client, { ...OPTS, requireThirdParty: true }), token)).reason).toBe('legacy_token');
  });

  it('garbage and other schemes are refused without asking the API server', async () => {
    const a = new TokenReviewAuthenticator(client, OPTS);
    const before = reviews;
    expect((await refusalOf(a, 'not-a-jwt')).reason).toBe('invalid_token');
    await expect(a.authenticate({ authorization: ['Basic abc'] })).rejects.toMatchObject({ reason: 'malformed' });
    await expect(a.authenticate({ authorization: [] })).resolves.toBeUndefined();
    expect(reviews).toBe(before);
  });

  it('client-certificate authentication ignores calls without a certificate', async () => {
    const a = new ClientCertificateAuthenticator({ trustDomain: () => 'cluster.local', ownIssuers: () => [], foreignIssuers: () => [] }, false);
    await expect(a.authenticate({ authorization: [] })).resolves.toBeUndefined();
  });
});
