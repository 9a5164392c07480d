package main

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	jwtauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	netextauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const testNodeID = "sidecar~10.1.0.5~echo-v1-abc.default~default.svc.cluster.local"

// requestLog records what the client sent, to check ACKs and NACKs.
type requestLog struct {
	mu    sync.Mutex
	nacks map[string]int // type URL -> NACK count
	acks  map[string]int // type URL -> requests carrying a nonce and no error
}

func (r *requestLog) record(typeURL, nonce string, nack bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case nack:
		r.nacks[typeURL]++
	case nonce != "":
		r.acks[typeURL]++
	}
}

func (r *requestLog) counts(typeURL string) (acks, nacks int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.acks[typeURL], r.nacks[typeURL]
}

// startADS serves the snapshot for testNodeID on a loopback port with go-control-plane.
func startADS(t *testing.T, snap *cache.Snapshot, serverOpts ...grpc.ServerOption) (string, *requestLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	snapshots := cache.NewSnapshotCache(true, cache.IDHash{}, quietLogger{})
	if err := snapshots.SetSnapshot(ctx, testNodeID, snap); err != nil {
		t.Fatal(err)
	}
	log := &requestLog{nacks: map[string]int{}, acks: map[string]int{}}
	callbacks := server.CallbackFuncs{
		StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			log.record(req.GetTypeUrl(), req.GetResponseNonce(), req.GetErrorDetail() != nil)
			return nil
		},
		StreamDeltaRequestFunc: func(_ int64, req *discoveryv3.DeltaDiscoveryRequest) error {
			log.record(req.GetTypeUrl(), req.GetResponseNonce(), req.GetErrorDetail() != nil)
			return nil
		},
	}
	xds := server.NewServer(ctx, snapshots, callbacks)
	gs := grpc.NewServer(serverOpts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, xds)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		cancel()
	})
	return lis.Addr().String(), log
}

type quietLogger struct{}

func (quietLogger) Debugf(string, ...any) {}
func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

func edsCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
	}
}

func assignment(name string) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: socketAddress("10.1.0.5", 8080),
				}},
			}},
		}},
	}
}

func socketAddress(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

func routeConfig(name, cluster string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    "echo.default.svc.cluster.local:8080",
			Domains: []string{"echo.default.svc.cluster.local", "echo"},
			Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
				}},
			}},
		}},
	}
}

func hcmListener(t *testing.T, name, rds string) *listenerv3.Listener {
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource: adsSource(), RouteConfigName: rds,
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       routerFilterName,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})},
		}},
	}
	return &listenerv3.Listener{
		Name:    name,
		Address: socketAddress("0.0.0.0", 8080),
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{{
				Name:       "envoy.filters.network.http_connection_manager",
				ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)},
			}},
		}},
	}
}

func snapshot(t *testing.T, res map[string][]types.Resource) *cache.Snapshot {
	t.Helper()
	s, err := cache.NewSnapshot("1", res)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func goodSnapshot(t *testing.T) *cache.Snapshot {
	s := snapshot(t, map[string][]types.Resource{
		typeCluster:  {edsCluster("outbound|8080||echo.default.svc.cluster.local")},
		typeEndpoint: {assignment("outbound|8080||echo.default.svc.cluster.local")},
		typeRoute:    {routeConfig("8080", "outbound|8080||echo.default.svc.cluster.local")},
		typeListener: {hcmListener(t, "0.0.0.0_8080", "8080")},
	})
	if err := s.Consistent(); err != nil {
		t.Fatalf("test snapshot is not consistent: %v", err)
	}
	return s
}

func testOptions(delta bool) collectOptions {
	node, err := buildNode(config{
		nodeID:   testNodeID,
		metadata: `{"NAMESPACE":"default"}`,
		locality: "region/zone",
	})
	if err != nil {
		panic(err)
	}
	return collectOptions{Node: node, Delta: delta, Quiet: 300 * time.Millisecond, Timeout: 10 * time.Second}
}

func runAgainst(t *testing.T, addr string, opts collectOptions) (*report, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	return validateServer(ctx, addr, opts)
}

func hasError(rep *report, typeURL, name, fragment string) bool {
	for _, e := range rep.Errors {
		if e.Type == typeURL && e.Name == name && strings.Contains(e.Message, fragment) {
			return true
		}
	}
	return false
}

func forBothProtocols(t *testing.T, f func(t *testing.T, delta bool)) {
	t.Run("sotw", func(t *testing.T) { f(t, false) })
	t.Run("delta", func(t *testing.T) { f(t, true) })
}

func TestConsistentSnapshotIsValid(t *testing.T) {
	forBothProtocols(t, func(t *testing.T, delta bool) {
		addr, log := startADS(t, goodSnapshot(t))
		opts := testOptions(delta)
		opts.Dump = true
		rep, code := runAgainst(t, addr, opts)
		if code != exitOK || !rep.OK {
			t.Fatalf("exit %d, errors: %+v", code, rep.Errors)
		}
		want := counts{Clusters: 1, Endpoints: 1, Listeners: 1, Routes: 1}
		if rep.Counts != want {
			t.Fatalf("counts %+v, want %+v", rep.Counts, want)
		}
		if got := rep.Resources[typeRoute]; len(got) != 1 || got[0] != "8080" {
			t.Fatalf("routes %v", got)
		}
		if len(rep.Dump[typeListener]["0.0.0.0_8080"]) == 0 {
			t.Fatalf("dump has no listener: %v", rep.Dump)
		}
		for _, typ := range allTypes {
			if typ == typeSecret {
				continue // the test server's snapshot names no secret
			}
			acks, nacks := log.counts(typ)
			if acks == 0 || nacks != 0 {
				t.Errorf("%s: %d ACKs, %d NACKs", shortType(typ), acks, nacks)
			}
		}
	})
}

func TestBrokenSnapshotIsReported(t *testing.T) {
	forBothProtocols(t, func(t *testing.T, delta bool) {
		const cl = "outbound|8080||echo.default.svc.cluster.local"
		noName := &clusterv3.Cluster{
			ConnectTimeout:       durationpb.New(time.Second),
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		}
		addr, log := startADS(t, snapshot(t, map[string][]types.Resource{
			typeCluster:  {edsCluster(cl), noName},
			typeEndpoint: {assignment(cl)},
			typeRoute:    {routeConfig("8080", "outbound|8080||missing.default.svc.cluster.local")},
			typeListener: {hcmListener(t, "0.0.0.0_8080", "8080")},
		}))
		rep, code := runAgainst(t, addr, testOptions(delta))
		if code != exitInvalid || rep.OK {
			t.Fatalf("exit %d ok=%v, want exit 1: %+v", code, rep.OK, rep.Errors)
		}
		if !hasError(rep, typeCluster, "", "Cluster.Name") {
			t.Errorf("no validation error for the unnamed cluster: %+v", rep.Errors)
		}
		if !hasError(rep, typeRoute, "8080", `"outbound|8080||missing.default.svc.cluster.local", which is not in CDS`) {
			t.Errorf("no error for the missing cluster: %+v", rep.Errors)
		}
		if len(rep.Errors) != 2 {
			t.Errorf("want exactly 2 errors, got %+v", rep.Errors)
		}
		// Everything else still arrived, and CDS was NACKed.
		if rep.Counts != (counts{Clusters: 2, Endpoints: 1, Listeners: 1, Routes: 1}) {
			t.Errorf("counts %+v", rep.Counts)
		}
		if _, nacks := log.counts(typeCluster); nacks == 0 {
			t.Errorf("CDS was not NACKed")
		}
		if _, nacks := log.counts(typeRoute); nacks != 0 {
			t.Errorf("RDS was NACKed although it decodes and validates")
		}
	})
}

func TestListenerChecks(t *testing.T) {
	const cl = "outbound|8080||echo.default.svc.cluster.local"
	l := hcmListener(t, "0.0.0.0_8080", "8080")
	// A second chain with the same (empty) match, a filter of unknown type, and an HCM whose
	// own rules fail (no stat_prefix) and whose filters do not end with the router.
	badHCM := &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig("inline", "nowhere")},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: routerFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})}},
			{Name: "envoy.filters.http.custom", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/acme.Unknown"}}},
		},
	}
	l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{
		Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, badHCM)},
		}},
	})
	tcp := &listenerv3.Listener{
		Name:    "0.0.0.0_9000",
		Address: socketAddress("0.0.0.0", 9000),
		FilterChains: []*listenerv3.FilterChain{{
			FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: []string{"a.example", "b.example"}},
			Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.tcp_proxy", ConfigType: &listenerv3.Filter_TypedConfig{
				TypedConfig: mustAny(t, &tcpproxyv3.TcpProxy{StatPrefix: "tcp", ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: "BlackHoleCluster"}}),
			}}},
		}, {
			FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: []string{"b.example"}},
			Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.tcp_proxy", ConfigType: &listenerv3.Filter_TypedConfig{
				TypedConfig: mustAny(t, &tcpproxyv3.TcpProxy{StatPrefix: "tcp", ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: cl}}),
			}}},
		}},
	}
	rc := routeConfig("8080", cl)
	rc.VirtualHosts = append(rc.VirtualHosts, &routev3.VirtualHost{
		Name: rc.VirtualHosts[0].Name, Domains: []string{"ECHO"},
		TypedPerFilterConfig: map[string]*anypb.Any{
			"envoy.filters.http.router": mustAny(t, &structpb.Struct{}),
		},
	})
	addr, _ := startADS(t, snapshot(t, map[string][]types.Resource{
		typeCluster:  {edsCluster(cl)},
		typeEndpoint: {assignment(cl)},
		typeRoute:    {rc},
		typeListener: {l, tcp},
	}))
	rep, code := runAgainst(t, addr, testOptions(false))
	if code != exitInvalid {
		t.Fatalf("exit %d: %+v", code, rep.Errors)
	}
	for _, want := range []struct{ typ, name, fragment string }{
		{typeListener, "0.0.0.0_8080", "have the same filter_chain_match"},
		{typeListener, "0.0.0.0_8080", `unknown type URL "type.googleapis.com/acme.Unknown"`},
		{typeListener, "0.0.0.0_8080", "HttpConnectionManager.StatPrefix"},
		{typeListener, "0.0.0.0_8080", "http_filters[0] is the router filter but is not the last"},
		{typeListener, "0.0.0.0_8080", `must end with the router filter envoy.filters.http.router; the last is "envoy.filters.http.custom"`},
		{typeListener, "0.0.0.0_8080", `route_config: virtual host "echo.default.svc.cluster.local:8080" routes[0] names cluster "nowhere"`},
		{typeListener, "0.0.0.0_9000", "overlapping filter_chain_match rules (both match server_names=b.example)"},
		{typeListener, "0.0.0.0_9000", `tcp_proxy cluster "BlackHoleCluster" is not in CDS`},
		{typeRoute, "8080", "are both named"},
		{typeRoute, "8080", `domain "ECHO" appears more than once`},
	} {
		if !hasError(rep, want.typ, want.name, want.fragment) {
			t.Errorf("missing %s %q: %q", shortType(want.typ), want.name, want.fragment)
		}
	}
	if t.Failed() {
		b, _ := json.MarshalIndent(rep.Errors, "", "  ")
		t.Logf("errors: %s", b)
	}
}

func TestMissingAssignmentAfterTimeout(t *testing.T) {
	const cl = "outbound|8080||echo.default.svc.cluster.local"
	addr, _ := startADS(t, snapshot(t, map[string][]types.Resource{
		typeCluster:  {edsCluster(cl)},
		typeRoute:    {routeConfig("8080", cl)},
		typeListener: {hcmListener(t, "0.0.0.0_8080", "8080")},
	}))
	opts := testOptions(false)
	// long enough for CDS and LDS to arrive on a loaded machine (the suite runs beside other tests):
	// only the assignment, which the server never has, is to be missing at the deadline
	opts.Timeout = 5 * time.Second
	rep, code := runAgainst(t, addr, opts)
	if code != exitInvalid {
		t.Fatalf("exit %d: %+v", code, rep.Errors)
	}
	if !hasError(rep, typeCluster, cl, "not received within 5s") {
		t.Fatalf("no missing-assignment error: %+v", rep.Errors)
	}
}

// streamWithContext hands a stream handler another context than the call's.
type streamWithContext struct {
	grpc.ServerStream
	ctx context.Context
}

func (s streamWithContext) Context() context.Context { return s.ctx }

// The server enforces the client's deadline (grpc-timeout) by its own clock and can end the stream
// with DEADLINE_EXCEEDED a moment before the client's context is done. That is the session's end,
// not a transport failure: what arrived is validated, and the assignment the server never had is
// reported missing (a CI run met the race; here the server's deadline comes first on purpose).
func TestServerSideDeadlineEndsTheSession(t *testing.T) {
	const cl = "outbound|8080||echo.default.svc.cluster.local"
	early := grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- handler(srv, streamWithContext{ss, ctx}) }()
		select {
		case err := <-done:
			return err
		case <-time.After(500 * time.Millisecond):
			return status.Error(codes.DeadlineExceeded, "context deadline exceeded")
		}
	})
	addr, _ := startADS(t, snapshot(t, map[string][]types.Resource{
		typeCluster:  {edsCluster(cl)},
		typeRoute:    {routeConfig("8080", cl)},
		typeListener: {hcmListener(t, "0.0.0.0_8080", "8080")},
	}), early)
	opts := testOptions(false)
	opts.Timeout = 5 * time.Second
	rep, code := runAgainst(t, addr, opts)
	if code != exitInvalid {
		t.Fatalf("exit %d: %+v", code, rep.Errors)
	}
	if !hasError(rep, typeCluster, cl, "not received within 5s") {
		t.Fatalf("no missing-assignment error: %+v", rep.Errors)
	}
}

func TestCommandLine(t *testing.T) {
	addr, _ := startADS(t, goodSnapshot(t))
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr strings.Builder
	code := run([]string{"-addr", addr, "-node-id", testNodeID, "-cluster", "echo.default",
		"-locality", "r/z/s", "-timeout", "5s", "-out", out}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ok", "counts", "errors", "resources"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("report has no %q: %s", k, raw)
		}
	}
	if _, ok := doc["dump"]; ok {
		t.Errorf("dump present without -dump")
	}
	if errs, _ := doc["errors"].([]any); errs == nil {
		t.Errorf("errors must be an empty list, not null: %s", raw)
	}

	// Nobody listening: exit 2.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()
	stdout.Reset()
	if code := run([]string{"-addr", dead, "-timeout", "1s"}, &stdout, &stderr); code != exitTransport {
		t.Fatalf("exit %d with no server, want 2", code)
	}
	if !strings.Contains(stdout.String(), `"type": "connection"`) {
		t.Errorf("report: %s", stdout.String())
	}
	if code := run([]string{"-metadata", "[]"}, &stdout, &stderr); code != exitTransport {
		t.Errorf("bad -metadata: exit %d, want 2", code)
	}
	if code := run([]string{"-h"}, &stdout, &stderr); code != exitOK {
		t.Errorf("-h: exit %d", code)
	}
}

func TestFilterChainMatchExpansion(t *testing.T) {
	l := &listenerv3.Listener{FilterChains: []*listenerv3.FilterChain{
		{FilterChainMatch: &listenerv3.FilterChainMatch{
			PrefixRanges: []*corev3.CidrRange{{AddressPrefix: "10.0.0.1", PrefixLen: wrapperspb.UInt32(8)}},
		}},
		// Same range once masked: Envoy reads both as 10.0.0.0/8.
		{FilterChainMatch: &listenerv3.FilterChainMatch{
			PrefixRanges: []*corev3.CidrRange{{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(8)}},
		}},
		// Different port: no overlap with either.
		{FilterChainMatch: &listenerv3.FilterChainMatch{
			DestinationPort: wrapperspb.UInt32(80),
			PrefixRanges:    []*corev3.CidrRange{{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(8)}},
		}},
		// Wildcard is a separate entry from any specific value.
		{FilterChainMatch: nil},
	}}
	var got []string
	checkFilterChainMatches(l, func(s string) { got = append(got, s) })
	if len(got) != 1 || !strings.Contains(got[0], "filter_chains[0] and filter_chains[1] have overlapping") {
		t.Fatalf("got %q", got)
	}
}

func TestFilterClusters(t *testing.T) {
	jwt := &jwtauthnv3.JwtAuthentication{Providers: map[string]*jwtauthnv3.JwtProvider{
		"b": {Issuer: "b", JwksSourceSpecifier: &jwtauthnv3.JwtProvider_RemoteJwks{RemoteJwks: &jwtauthnv3.RemoteJwks{HttpUri: &corev3.HttpUri{Uri: "http://keys", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "outbound|80||keys"}}}}},
		"a": {Issuer: "a", JwksSourceSpecifier: &jwtauthnv3.JwtProvider_LocalJwks{LocalJwks: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "{}"}}}},
	}}
	httpAuthz := &extauthzv3.ExtAuthz{Services: &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{ServerUri: &corev3.HttpUri{Uri: "http://authz", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "outbound|9000||authz"}}}}}
	grpcAuthz := &netextauthzv3.ExtAuthz{GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "outbound|9001||authz"}}}}
	for _, c := range []struct {
		msg  proto.Message
		want string
	}{{jwt, "outbound|80||keys"}, {httpAuthz, "outbound|9000||authz"}, {grpcAuthz, "outbound|9001||authz"}} {
		got := filterClusters(c.msg)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("filterClusters(%T) = %v, want [%s]", c.msg, got, c.want)
		}
	}
}

// A service that goes away takes its cluster, its listener and then its route configuration
// with it; the route configuration the client no longer asks for is not checked against the
// new CDS (the daemon's e2e run saw this when another test deleted its services mid-session).
func TestDroppedRouteConfigurationIsForgotten(t *testing.T) {
	const keep, drop = "outbound|8080||echo.default.svc.cluster.local", "outbound|8080||db.other.svc.cluster.local"
	in := func(typeURL string, full bool, msgs ...proto.Message) *incoming {
		out := &incoming{typeURL: typeURL, fullState: full}
		for _, m := range msgs {
			out.resources = append(out.resources, rawResource{any: mustAny(t, m)})
		}
		return out
	}
	c := newCollection(true)
	c.apply(in(typeCluster, true, edsCluster(keep), edsCluster(drop)))
	c.apply(in(typeEndpoint, false, assignment(keep), assignment(drop)))
	c.apply(in(typeListener, true, hcmListener(t, "10.0.0.1_8080", "echo:8080"), hcmListener(t, "10.0.0.2_8080", "db:8080")))
	c.resubscribe(typeRoute, c.rdsNames())
	c.apply(in(typeRoute, false, routeConfig("echo:8080", keep), routeConfig("db:8080", drop)))

	// the service "db" is deleted: CDS and LDS lose it first, then the client asks for less
	c.apply(in(typeCluster, true, edsCluster(keep)))
	c.apply(in(typeListener, true, hcmListener(t, "10.0.0.1_8080", "echo:8080")))
	stale := *c
	stale.resources = map[string]map[string]proto.Message{}
	for k, v := range c.resources {
		stale.resources[k] = maps.Clone(v)
	}
	stale.seen = map[problem]bool{}
	checkConsistency(&stale, "1s")
	if len(stale.problems) == 0 {
		t.Fatal("the stale route configuration was expected to be reported before resubscribing")
	}

	c.resubscribe(typeRoute, c.rdsNames())
	c.resubscribe(typeEndpoint, c.edsNames())
	if got := sortedKeys(c.resources[typeRoute]); !slices.Equal(got, []string{"echo:8080"}) {
		t.Fatalf("route configurations kept: %v", got)
	}
	if _, ok := c.dump[typeRoute]["db:8080"]; ok {
		t.Fatal("the dump still holds the dropped route configuration")
	}
	checkConsistency(c, "1s")
	if len(c.problems) != 0 {
		t.Fatalf("problems: %+v", c.problems)
	}
}
