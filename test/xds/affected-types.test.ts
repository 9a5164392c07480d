/** Which xDS types a push regenerates, by its causes. */
import { mergePushRequests, pushRequest } from '../../src/model/push-request.js';
import { affectedTypes } from '../../src/xds/affected-types.js';
import { TypeUrl } from '../../src/xds/types.js';

const sorted = (s: ReadonlySet<string>): string[] => [...s].sort();
const ALL = sorted(new Set([TypeUrl.Cluster, TypeUrl.Endpoint, TypeUrl.Listener, TypeUrl.Route, TypeUrl.Secret, TypeUrl.NameTable]));

describe('affectedTypes', () => {
  it('is EDS alone for an endpoint push', () => {
    expect(sorted(affectedTypes(pushRequest({ full: false, reason: 'endpoint', edsHosts: ['a'] })))).toEqual([TypeUrl.Endpoint]);
    expect(sorted(affectedTypes(pushRequest({ full: false, reason: 'endpoint', edsHosts: ['a'] }), 'sidecar'))).toEqual([TypeUrl.Endpoint]);
  });

  it('adds clusters to an endpoint push for proxyless gRPC clients (automatic mutual TLS reads the endpoints)', () => {
    expect(sorted(affectedTypes(pushRequest({ full: false, reason: 'endpoint', edsHosts: ['a'] }), 'grpc'))).toEqual(sorted(new Set([TypeUrl.Cluster, TypeUrl.Endpoint])));
  });

  it('is clusters, listeners and secrets for a credential (Secret) change', () => {
    expect(sorted(affectedTypes(pushRequest({ full: true, reason: 'secret', kinds: ['Secret'] })))).toEqual(sorted(new Set([TypeUrl.Cluster, TypeUrl.Listener, TypeUrl.Secret])));
  });

  it('is listeners and routes for VirtualService and Gateway changes', () => {
    const vs = pushRequest({ full: true, reason: 'config', kinds: ['VirtualService'] });
    expect(sorted(affectedTypes(vs))).toEqual(sorted(new Set([TypeUrl.Listener, TypeUrl.Route])));
    const both = mergePushRequests(vs, pushRequest({ full: true, reason: 'config', kinds: ['Gateway'] }));
    expect(sorted(affectedTypes(both))).toEqual(sorted(new Set([TypeUrl.Listener, TypeUrl.Route])));
  });

  it('is listeners for AuthorizationPolicy, listeners, clusters and endpoints for PeerAuthentication (auto mTLS follows it)', () => {
    expect(sorted(affectedTypes(pushRequest({ full: true, reason: 'config', kinds: ['AuthorizationPolicy'] })))).toEqual([TypeUrl.Listener]);
    expect(sorted(affectedTypes(pushRequest({ full: true, reason: 'config', kinds: ['PeerAuthentication'] })))).toEqual(sorted(new Set([TypeUrl.Cluster, TypeUrl.Endpoint, TypeUrl.Listener])));
  });

  it('is every type once a kind that shapes clusters, or another cause, takes part', () => {
    const vs = pushRequest({ full: true, reason: 'config', kinds: ['VirtualService'] });
    expect(sorted(affectedTypes(mergePushRequests(vs, pushRequest({ full: true, reason: 'config', kinds: ['DestinationRule'] }))))).toEqual(ALL);
    expect(sorted(affectedTypes(mergePushRequests(vs, pushRequest({ full: true, reason: 'service' }))))).toEqual(ALL);
    expect(sorted(affectedTypes(mergePushRequests(vs, pushRequest({ full: false, reason: 'endpoint', edsHosts: ['a'] }))))).toEqual(ALL);
    expect(sorted(affectedTypes(pushRequest({ full: true, reason: 'global' })))).toEqual(ALL);
    expect(sorted(affectedTypes(pushRequest({ full: true, reason: 'config', kinds: ['Sidecar'] })))).toEqual(ALL);
  });
});
