import { readFileSync } from 'node:fs';
import { DURATION_PATTERN, durationMs, isDuration } from '../../src/util/config-duration.js';
import { KINDS } from '../../src/config/kinds.js';
import { expectIssue, issuesOf } from './helpers.js';

describe('generated spec schemas', () => {
  it('reports unknown fields with their path', () => {
    const issues = issuesOf('VirtualService', { hosts: ['a'], http: [{ route: [{ destination: { host: 'a', subsett: 'v1' } }] }] });
    expectIssue(issues, 'spec.http[0].route[0].destination.subsett', 'unknown field');
  });

  it('reports wrong types with what was expected and what was found', () => {
    const issues = issuesOf('VirtualService', { hosts: 'a.example.com' });
    expectIssue(issues, 'spec.hosts', 'expected array, got string "a.example.com"');
  });

  it('reports missing required fields', () => {
    expectIssue(issuesOf('DestinationRule', {}), 'spec.host', 'required field is missing (expected string)');
    expectIssue(issuesOf('Gateway', { servers: [{ hosts: ['*'] }] }), 'spec.servers[0].port', 'required field is missing');
    expectIssue(issuesOf('Gateway', { servers: [] }), 'spec.servers', 'must not be empty');
    expectIssue(issuesOf('DestinationRule', { host: '' }), 'spec.host', 'must not be empty');
  });

  it('reports enum values outside the allowed names', () => {
    const issues = issuesOf('DestinationRule', { host: 'a', trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } });
    expectIssue(issues, 'spec.trafficPolicy.tls.mode', 'string "ISTIO_MUTUAL" is not one of DISABLE, SIMPLE, MUTUAL, MESH_MUTUAL');
  });

  it('allows at most one member of a oneof and names the oneof', () => {
    const issues = issuesOf('VirtualService', { hosts: ['a'], http: [{ match: [{ uri: { exact: '/a', prefix: '/' } }], route: [{ destination: { host: 'a' } }] }] });
    expectIssue(issues, 'spec.http[0].match[0].uri.prefix', 'oneof "match_type"');
    const lb = issuesOf('DestinationRule', { host: 'a', trafficPolicy: { loadBalancer: { simple: 'RANDOM', consistentHash: { useSourceIp: true } } } });
    expectIssue(lb, 'spec.trafficPolicy.loadBalancer.consistentHash', 'only one of simple, consistentHash may be set');
  });

  it('checks durations, integers and unsigned integers', () => {
    const vs = (retries: unknown, timeout?: unknown) => issuesOf('VirtualService', { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' } }], retries, timeout }] });
    expect(vs({ attempts: 2, perTryTimeout: '1.5s' }, '1m30s')).toEqual([]);
    expectIssue(vs({ perTryTimeout: '2 seconds' }), 'spec.http[0].retries.perTryTimeout', 'must be a duration such as');
    expectIssue(vs({ attempts: 1.5 }), 'spec.http[0].retries.attempts', 'expected int');
    const port = issuesOf('Gateway', { servers: [{ port: { number: -1, protocol: 'HTTP' }, hosts: ['*'] }] });
    expectIssue(port, 'spec.servers[0].port.number', '>=0');
  });

  it('maps wrappers to plain values and Struct to free-form objects', () => {
    expect(issuesOf('DestinationRule', { host: 'a', trafficPolicy: { outlierDetection: { consecutive5xxErrors: 5 } } })).toEqual([]);
    expectIssue(issuesOf('DestinationRule', { host: 'a', trafficPolicy: { outlierDetection: { consecutive5xxErrors: { value: 5 } } } }), 'spec.trafficPolicy.outlierDetection.consecutive5xxErrors', 'expected number');
    const ef = { configPatches: [{ applyTo: 'HTTP_FILTER', patch: { operation: 'ADD', value: { name: 'x', typed_config: { a: [1, 2] } } } }] };
    expect(issuesOf('EnvoyFilter', ef)).toEqual([]);
  });

  it('validates map keys of integer maps', () => {
    const issues = issuesOf('PeerAuthentication', { selector: { matchLabels: { app: 'a' } }, portLevelMtls: { http: { mode: 'STRICT' } } });
    expectIssue(issues, 'spec.portLevelMtls.http', 'map key must be a non-negative integer');
  });

  it('lists every kind of the contract with its API group', () => {
    const groups = Object.fromEntries(Object.values(KINDS).map((k) => [k.kind, k.apiVersion]));
    expect(groups).toEqual({
      AuthorizationPolicy: 'security.mesh.io/v1',
      DestinationRule: 'networking.mesh.io/v1',
      EnvoyFilter: 'networking.mesh.io/v1',
      Gateway: 'networking.mesh.io/v1',
      PeerAuthentication: 'security.mesh.io/v1',
      ProxyConfig: 'networking.mesh.io/v1',
      RequestAuthentication: 'security.mesh.io/v1',
      ServiceEntry: 'networking.mesh.io/v1',
      Sidecar: 'networking.mesh.io/v1',
      Telemetry: 'telemetry.mesh.io/v1',
      VirtualService: 'networking.mesh.io/v1',
      WorkloadEntry: 'networking.mesh.io/v1',
      WorkloadGroup: 'networking.mesh.io/v1',
    });
    expect(KINDS.ServiceEntry.plural).toBe('serviceentries');
  });
});

describe('generated OpenAPI schemas', () => {
  type Schema = { type?: string; properties?: Record<string, Schema>; items?: Schema; required?: string[]; oneOf?: unknown[]; pattern?: string; enum?: string[]; description?: string };
  const doc = JSON.parse(readFileSync(new URL('../../src/gen/config/openapi.json', import.meta.url), 'utf8')) as Record<
    string,
    { group: string; version: string; plural: string; namespaced: boolean; schema: Schema }
  >;

  it('has one structural schema per kind with spec and status', () => {
    expect(Object.keys(doc).sort()).toEqual(Object.keys(KINDS).sort());
    const vs = doc.VirtualService;
    expect(vs).toMatchObject({ group: 'networking.mesh.io', version: 'v1', plural: 'virtualservices', namespaced: true });
    expect(vs.schema.properties?.status).toEqual({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    expect(vs.schema.properties?.spec.properties?.hosts).toMatchObject({ type: 'array', items: { type: 'string' } });
  });

  it('carries required fields, enums, duration patterns, oneofs and comments', () => {
    const dr = doc.DestinationRule.schema.properties!.spec;
    expect(dr.required).toEqual(['host']);
    expect(dr.description).toMatch(/Traffic policy for a service/);
    const tls = dr.properties!.trafficPolicy.properties!.tls.properties!.mode;
    expect(tls.enum).toEqual(['DISABLE', 'SIMPLE', 'MUTUAL', 'MESH_MUTUAL']);
    const hs = doc.VirtualService.schema.properties!.spec.properties!.http.items!;
    expect(hs.properties!.timeout).toMatchObject({ type: 'string', pattern: DURATION_PATTERN.source });
    const sm = hs.properties!.match.items!.properties!.uri;
    expect(sm.oneOf).toHaveLength(4);
    expect(JSON.stringify(doc)).not.toMatch(/\+required|\+kind/);
  });
});

describe('durations', () => {
  it('accepts the protobuf and the unit forms and converts them to milliseconds', () => {
    expect(durationMs('1.5s')).toBe(1500);
    expect(durationMs('100ms')).toBe(100);
    expect(durationMs('1m30s')).toBe(90_000);
    expect(durationMs('1h')).toBe(3_600_000);
    expect(durationMs('1.1s')).toBe(1100);
    expect(durationMs('250us')).toBe(0.25);
    expect(durationMs('0s')).toBe(0);
  });

  it('rejects other forms', () => {
    for (const bad of ['', '5', '-1s', '1.s', '1 s', 's', '1d']) {
      expect(isDuration(bad)).toBe(false);
      expect(() => durationMs(bad)).toThrow(/invalid duration/);
    }
  });
});
