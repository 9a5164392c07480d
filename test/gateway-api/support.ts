/**
 * Test support for the gateway-api tests: minimal structural CRDs of the gateway-api kinds the daemon
 * reads (written for these tests: the served versions, the status subresource, and specs kept as
 * they are), installed into and removed from the local API server; and an in-process daemon
 * started with the real bootstrap, its logs kept for assertions.
 */
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parseDiscoveryArgs } from '../../src/config/discovery-flags.js';
import { daemonConfigFrom } from '../../src/bootstrap/from-options.js';
import { startDaemon, type RunningDaemon } from '../../src/bootstrap/daemon.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { eventually } from '../support/eventually.js';

const GROUP = 'gateway.networking.k8s.io';

interface CrdShape {
  readonly kind: string;
  readonly plural: string;
  readonly versions: ReadonlyArray<string>;
  readonly namespaced: boolean;
  readonly status: boolean;
}

const SHAPES: ReadonlyArray<CrdShape> = [
  { kind: 'GatewayClass', plural: 'gatewayclasses', versions: ['v1'], namespaced: false, status: true },
  { kind: 'Gateway', plural: 'gateways', versions: ['v1'], namespaced: true, status: true },
  { kind: 'HTTPRoute', plural: 'httproutes', versions: ['v1'], namespaced: true, status: true },
  { kind: 'GRPCRoute', plural: 'grpcroutes', versions: ['v1'], namespaced: true, status: true },
  { kind: 'TCPRoute', plural: 'tcproutes', versions: ['v1alpha2'], namespaced: true, status: true },
  { kind: 'TLSRoute', plural: 'tlsroutes', versions: ['v1alpha2'], namespaced: true, status: true },
  { kind: 'ReferenceGrant', plural: 'referencegrants', versions: ['v1beta1'], namespaced: true, status: false },
];

const FREE_FORM = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

function crd(s: CrdShape): KubeObject & Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${s.plural}.${GROUP}`,
      labels: { 'mesh.io/test': 'gateway-api' },
      // *.k8s.io groups need this annotation; "unapproved" marks CRDs outside the Kubernetes API review.
      annotations: { 'api-approved.kubernetes.io': 'unapproved, test-only structural CRDs of the mesh tests' },
    },
    spec: {
      group: GROUP,
      scope: s.namespaced ? 'Namespaced' : 'Cluster',
      names: { kind: s.kind, listKind: `${s.kind}List`, plural: s.plural, singular: s.kind.toLowerCase() },
      versions: s.versions.map((v, i) => ({
        name: v,
        served: true,
        storage: i === 0,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: FREE_FORM, ...(s.status ? { status: FREE_FORM } : {}) } } },
        ...(s.status ? { subresources: { status: {} } } : {}),
      })),
    },
  };
}

interface CrdState extends KubeObject {
  readonly status?: { readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }> };
}

const crdRef = (s: CrdShape): { apiVersion: string; kind: string; name: string } => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: `${s.plural}.${GROUP}` });

/** Installs the test CRDs and waits until the API server serves them. */
export async function installGatewayApiCrds(client: KubeClient): Promise<void> {
  await Promise.all(SHAPES.map((s) => client.applyObject(crd(s), { fieldManager: 'mesh-tests', force: true })));
  await eventually(
    'the gateway-api test CRDs to be established',
    async () => {
      const states = await Promise.all(SHAPES.map((s) => client.get<CrdState>(crdRef(s))));
      return states.every((c) => c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'));
    },
    { timeoutMs: 60_000 },
  );
}

/** Removes the test CRDs (and with them every gateway-api object) and waits until they are gone. */
export async function removeGatewayApiCrds(client: KubeClient): Promise<void> {
  await Promise.all(SHAPES.map((s) => client.delete(crdRef(s)).catch(() => undefined)));
  await eventually('the gateway-api test CRDs to be gone', async () => (await Promise.all(SHAPES.map((s) => client.find(crdRef(s))))).every((c) => c === undefined), { timeoutMs: 90_000 });
}

export interface TestDaemon {
  readonly daemon: RunningDaemon;
  logs(): string;
  stop(): Promise<void>;
}

/** Starts the daemon in this process with `--registries Cluster`; resolves once it is ready. */
export async function startClusterDaemon(kubeconfig: string, env: Record<string, string>): Promise<TestDaemon> {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      if (text.length > 4 << 20) text = text.slice(-(2 << 20));
      done();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const { options, env: parsed } = parseDiscoveryArgs(
    [
      '--registries',
      'Cluster',
      '--clusterconfig',
      kubeconfig,
      '--grpcAddr',
      '127.0.0.1:0',
      '--httpAddr',
      '127.0.0.1:0',
      '--monitoringAddr',
      '127.0.0.1:0',
      '--meshConfig',
      join(tmpdir(), `mesh-gwapi-no-mesh-config-${process.pid}`),
      '--shutdownDuration',
      '1s',
    ],
    { ENABLE_CA_SERVER: 'false', ...env },
  );
  const cfg = daemonConfigFrom(options, parsed);
  const daemon = await startDaemon(cfg, { main: logger, ads: logger, model: logger, source: logger });
  return { daemon, logs: () => text, stop: () => daemon.stop() };
}
