#!/usr/bin/env node
// Checks that a running control plane behaves like a cluster, through the REST API only:
//   1. a Deployment of 2 replicas gets 2 pods Running and Ready, each with an IP;
//   2. a Service selecting them gets an EndpointSlice with 2 ready endpoints;
//   3. a deleted pod is replaced and the EndpointSlice follows;
//   4. a TokenRequest token of a ServiceAccount passes a TokenReview, a tampered one does not;
//   5. the namespace is deleted completely.
// Usage: node scripts/cluster/smoke.mjs [kubeconfig]   (default: the local plane's admin kubeconfig)
// Prints what it sees; exits 1 on the first check that fails.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parse } from 'yaml';

const kubeconfigPath =
  process.argv[2] ?? join(process.env.MESH_CLUSTER_DIR ?? join(homedir(), '.cache', 'mesh', 'cluster'), 'admin.kubeconfig');

function credentials(path) {
  const doc = parse(readFileSync(path, 'utf8'));
  const ctx = doc.contexts.find((c) => c.name === doc['current-context']).context;
  const cluster = doc.clusters.find((c) => c.name === ctx.cluster).cluster;
  const user = doc.users.find((u) => u.name === ctx.user).user;
  const load = (data, file) =>
    data ? Buffer.from(data, 'base64') : file ? readFileSync(resolve(dirname(path), file)) : undefined;
  return {
    server: cluster.server,
    ca: load(cluster['certificate-authority-data'], cluster['certificate-authority']),
    cert: load(user['client-certificate-data'], user['client-certificate']),
    key: load(user['client-key-data'], user['client-key']),
    token: user.token,
  };
}

const creds = credentials(kubeconfigPath);

function api(method, path, body) {
  const url = new URL(path, creds.server);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers = { Accept: 'application/json' };
  if (payload) headers['Content-Type'] = 'application/json';
  if (creds.token) headers.Authorization = `Bearer ${creds.token}`;
  return new Promise((done, fail) => {
    const req = request(url, { method, headers, ca: creds.ca, cert: creds.cert, key: creds.key, timeout: 15000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = JSON.parse(text);
        } catch {
          json = text;
        }
        done({ status: res.statusCode, body: json });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timeout`)));
    req.on('error', fail);
    req.end(payload);
  });
}

async function must(method, path, body) {
  const res = await api(method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

async function until(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await probe();
    if (last.ok) return last.value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; last seen: ${JSON.stringify(last.seen)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const log = (...args) => console.log('smoke:', ...args);
const ns = `smoke-${Date.now().toString(36)}`;
const started = Date.now();
const ms = () => `${Date.now() - started} ms`;

async function readyPods() {
  const pods = (await must('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`)).items;
  const view = pods.map((p) => ({
    name: p.metadata.name,
    node: p.spec.nodeName,
    phase: p.status.phase,
    ready: (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
    ip: p.status.podIP,
    deleting: Boolean(p.metadata.deletionTimestamp),
  }));
  return view;
}

async function readyEndpoints() {
  const slices = (await must('GET', `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Decho`)).items;
  return slices.flatMap((s) =>
    (s.endpoints ?? []).map((e) => ({
      slice: s.metadata.name,
      addresses: e.addresses,
      ready: e.conditions?.ready === true,
      pod: e.targetRef?.name,
      node: e.nodeName,
      ports: (s.ports ?? []).map((p) => `${p.name ?? ''}:${p.port}/${p.protocol}`).join(','),
    })),
  );
}

try {
  const version = await must('GET', '/version');
  log(`server ${creds.server}, Kubernetes ${version.gitVersion}`);
  await must('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await until('default service account of the new namespace', 30000, async () => {
    const r = await api('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`);
    return { ok: r.status === 200, seen: r.status };
  });

  // 1. Deployment -> ReplicaSet -> 2 pods scheduled, Running and Ready with IPs.
  await must('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'echo' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'echo' } },
      template: {
        metadata: { labels: { app: 'echo' } },
        spec: { containers: [{ name: 'echo', image: 'registry.k8s.io/pause:3.10', ports: [{ name: 'grpc', containerPort: 8080 }] }] },
      },
    },
  });
  await must('POST', `/api/v1/namespaces/${ns}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'echo' },
    spec: { selector: { app: 'echo' }, ports: [{ name: 'grpc', port: 80, targetPort: 'grpc', protocol: 'TCP' }] },
  });
  const pods = await until('2 pods Running and Ready with IPs', 60000, async () => {
    const view = await readyPods();
    const good = view.filter((p) => p.phase === 'Running' && p.ready && p.ip && !p.deleting);
    return { ok: good.length === 2, value: good, seen: view };
  });
  log(`pods Running/Ready after ${ms()}:`);
  for (const p of pods) log(`  ${p.name} node=${p.node} phase=${p.phase} ready=${p.ready} ip=${p.ip}`);
  const deploy = await must('GET', `/apis/apps/v1/namespaces/${ns}/deployments/echo`);
  log(`deployment echo: replicas=${deploy.status.replicas} ready=${deploy.status.readyReplicas} available=${deploy.status.availableReplicas}`);
  const svc = await must('GET', `/api/v1/namespaces/${ns}/services/echo`);
  log(`service echo: clusterIP=${svc.spec.clusterIP}`);

  // 2. EndpointSlice of the Service: 2 ready endpoints, the pods' IPs.
  const eps = await until('EndpointSlice with 2 ready endpoints', 30000, async () => {
    const view = await readyEndpoints();
    const ips = new Set(pods.map((p) => p.ip));
    const good = view.filter((e) => e.ready && e.addresses.every((a) => ips.has(a)));
    return { ok: good.length === 2, value: view, seen: view };
  });
  log(`endpointslice after ${ms()}:`);
  for (const e of eps) log(`  ${e.slice} ${e.addresses.join(',')} ready=${e.ready} pod=${e.pod} node=${e.node} ports=${e.ports}`);

  // 3. Replacement of a deleted pod (the simulator removes it; the ReplicaSet makes another).
  const victim = pods[0];
  await must('DELETE', `/api/v1/namespaces/${ns}/pods/${victim.name}`);
  const after = await until('pod replaced and EndpointSlice updated', 60000, async () => {
    const view = await readyEndpoints();
    const podsNow = await readyPods();
    const good = view.filter((e) => e.ready);
    const ok = good.length === 2 && !good.some((e) => e.pod === victim.name) && !podsNow.some((p) => p.name === victim.name);
    return { ok, value: good, seen: { view, podsNow } };
  });
  log(`deleted ${victim.name}; after ${ms()} ready endpoints: ${after.map((e) => `${e.pod}=${e.addresses[0]}`).join(' ')}`);

  // 4. ServiceAccount token: TokenRequest, then TokenReview (valid and tampered).
  await must('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'meshd' } });
  const tr = await must('POST', `/api/v1/namespaces/${ns}/serviceaccounts/meshd/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { audiences: ['mesh-test'], expirationSeconds: 600 },
  });
  const token = tr.status.token;
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
  log(`TokenRequest: ${token.length}-char token, expires ${tr.status.expirationTimestamp}; iss=${claims.iss} aud=${JSON.stringify(claims.aud)} sub=${claims.sub}`);
  const review = async (t) =>
    must('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: t, audiences: ['mesh-test'] },
    });
  const good = await review(token);
  log(`TokenReview (valid): authenticated=${good.status.authenticated} user=${good.status.user?.username} groups=${JSON.stringify(good.status.user?.groups)} audiences=${JSON.stringify(good.status.audiences)}`);
  if (good.status.authenticated !== true || good.status.user?.username !== `system:serviceaccount:${ns}:meshd`) {
    throw new Error(`TokenReview did not authenticate the token: ${JSON.stringify(good.status)}`);
  }
  const [h, p, s] = token.split('.');
  const tampered = `${h}.${p}.${s.slice(0, -4)}${s.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
  const bad = await review(tampered);
  log(`TokenReview (tampered signature): authenticated=${bad.status.authenticated ?? false} error=${JSON.stringify(bad.status.error ?? '')}`);
  if (bad.status.authenticated === true) throw new Error('a tampered token was accepted');
  const wrongAud = await must('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    spec: { token, audiences: ['someone-else'] },
  });
  log(`TokenReview (other audience): authenticated=${wrongAud.status.authenticated ?? false}`);
  if (wrongAud.status.authenticated === true) throw new Error('a token was accepted for another audience');

  // 5. Namespace deletion runs to the end (pods removed by the simulator, then the namespace).
  await must('DELETE', `/api/v1/namespaces/${ns}`);
  await until('namespace deleted', 90000, async () => {
    const r = await api('GET', `/api/v1/namespaces/${ns}`);
    return { ok: r.status === 404, seen: r.status === 200 ? r.body.status : r.status };
  });
  log(`namespace ${ns} deleted after ${ms()}`);
  console.log('smoke: 5 passed, 0 failed');
} catch (err) {
  console.error(`smoke: FAILED after ${ms()}: ${err instanceof Error ? err.message : String(err)}`);
  await api('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
  process.exit(1);
}
