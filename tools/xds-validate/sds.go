package main

import (
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
)

// typeSecret is SDS: secrets named by transport sockets whose sds_config is the ADS stream.
const typeSecret = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"

// sdsRef is one SDS secret a resource names, and where.
type sdsRef struct {
	where string
	name  string
	// ads is true when the secret is asked for on the ADS stream; otherwise it names its own
	// config source (an agent's SDS cluster from the bootstrap), which this client cannot follow.
	ads bool
}

// commonSdsRefs lists the SDS secret configs of one common TLS context.
func commonSdsRefs(where string, c *tlsv3.CommonTlsContext) []sdsRef {
	var out []sdsRef
	add := func(w string, s *tlsv3.SdsSecretConfig) {
		if s == nil {
			return
		}
		out = append(out, sdsRef{where: w, name: s.GetName(), ads: s.GetSdsConfig().GetAds() != nil})
	}
	for i, s := range c.GetTlsCertificateSdsSecretConfigs() {
		add(fmt.Sprintf("%s.tls_certificate_sds_secret_configs[%d]", where, i), s)
	}
	add(where+".validation_context_sds_secret_config", c.GetValidationContextSdsSecretConfig())
	add(where+".combined_validation_context.validation_context_sds_secret_config", c.GetCombinedValidationContext().GetValidationContextSdsSecretConfig())
	return out
}

// socketSdsRefs lists the SDS secrets of a TLS transport socket (either direction).
func socketSdsRefs(where string, ts *corev3.TransportSocket) []sdsRef {
	if ts.GetTypedConfig() == nil {
		return nil
	}
	inner, err := unpackAny(ts.GetTypedConfig())
	if err != nil {
		return nil
	}
	switch ctx := inner.(type) {
	case *tlsv3.DownstreamTlsContext:
		return commonSdsRefs(where+".common_tls_context", ctx.GetCommonTlsContext())
	case *tlsv3.UpstreamTlsContext:
		return commonSdsRefs(where+".common_tls_context", ctx.GetCommonTlsContext())
	}
	return nil
}

// sdsRefs lists the SDS secrets a listener's filter chains or a cluster's transport sockets name.
func sdsRefs(m proto.Message) []sdsRef {
	var out []sdsRef
	switch r := m.(type) {
	case *listenerv3.Listener:
		for i, fc := range r.GetFilterChains() {
			out = append(out, socketSdsRefs(fmt.Sprintf("filter_chains[%d].transport_socket", i), fc.GetTransportSocket())...)
		}
		if fc := r.GetDefaultFilterChain(); fc != nil {
			out = append(out, socketSdsRefs("default_filter_chain.transport_socket", fc.GetTransportSocket())...)
		}
	case *clusterv3.Cluster:
		out = append(out, socketSdsRefs("transport_socket", r.GetTransportSocket())...)
		for i, tm := range r.GetTransportSocketMatches() {
			out = append(out, socketSdsRefs(fmt.Sprintf("transport_socket_matches[%d].transport_socket", i), tm.GetTransportSocket())...)
		}
	}
	return out
}

// sdsNames returns the sorted secret names the current listeners and clusters ask for on ADS.
func (c *collection) sdsNames() []string {
	set := map[string]bool{}
	for _, t := range []string{typeCluster, typeListener} {
		for _, m := range c.resources[t] {
			for _, r := range sdsRefs(m) {
				if r.ads {
					set[r.name] = true
				}
			}
		}
	}
	return sortedKeys(set)
}

// checkSecrets: every secret named on ADS must have arrived.
func checkSecrets(c *collection, notReceived func(t, n string) string) {
	for _, t := range []string{typeCluster, typeListener} {
		for _, name := range sortedKeys(c.resources[t]) {
			for _, r := range sdsRefs(c.resources[t][name]) {
				if !r.ads {
					continue
				}
				if _, ok := c.resources[typeSecret][r.name]; !ok {
					c.addProblem(t, name, fmt.Sprintf("%s: SDS secret %q: %s", r.where, r.name, notReceived(typeSecret, r.name)))
				}
			}
		}
	}
}
