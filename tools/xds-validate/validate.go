package main

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	jwtauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	netextauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	routerFilterName = "envoy.filters.http.router"
	anyFullName      = "google.protobuf.Any"

	// Envoy parses typed_filter_metadata only for keys it has a factory for and keeps the rest
	// opaque, so an unknown type there is not a configuration error.
	typedFilterMetadataField = "envoy.config.core.v3.Metadata.typed_filter_metadata"
)

var (
	routerTypeURL = "type.googleapis.com/" + string((&routerv3.Router{}).ProtoReflect().Descriptor().FullName())

	errUnknownType = errors.New("unknown type URL")
)

// decodeResource turns one resource of a response into its message and name.
func decodeResource(typeURL string, raw rawResource) (proto.Message, string, error) {
	a := raw.any
	wrapperName := raw.name
	if a.GetTypeUrl() == typeResourceWrapper {
		var w discoveryv3.Resource
		if err := a.UnmarshalTo(&w); err != nil {
			return nil, "", fmt.Errorf("cannot decode the Resource wrapper: %v", err)
		}
		a, wrapperName = w.GetResource(), w.GetName()
		if a == nil {
			return nil, "", fmt.Errorf("Resource wrapper %q carries no resource", w.GetName())
		}
	}
	if a.GetTypeUrl() != typeURL {
		return nil, "", fmt.Errorf("resource of type %q in a response of type %q", a.GetTypeUrl(), typeURL)
	}
	msg, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("cannot decode: %v", err)
	}
	name := resourceName(msg)
	if wrapperName != "" && wrapperName != name {
		return nil, "", fmt.Errorf("resource is sent under the name %q but is named %q", wrapperName, name)
	}
	return msg, name, nil
}

// resourceName is the name Envoy keys a resource by.
func resourceName(m proto.Message) string {
	if cla, ok := m.(*endpointv3.ClusterLoadAssignment); ok {
		return cla.GetClusterName()
	}
	if n, ok := m.(interface{ GetName() string }); ok {
		return n.GetName()
	}
	return ""
}

// keepJSON stores the protojson form of a resource for the report's dump, with the proto
// (snake_case) field names Envoy's own config dump uses.
func (c *collection) keepJSON(typeURL, name string, m proto.Message) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		b, _ = protojson.Marshal(structpb.NewStringValue("cannot render as JSON: " + err.Error()))
	}
	if c.dump[typeURL] == nil {
		c.dump[typeURL] = map[string][]byte{}
	}
	c.dump[typeURL][name] = b
}

// validateResource runs the protoc-gen-validate rules on a resource and on everything packed in
// a google.protobuf.Any anywhere inside it, and returns one message per violation.
func validateResource(m proto.Message) []string {
	out := ruleViolations(m)
	walkAnys(m.ProtoReflect(), "", &out)
	return out
}

// ruleViolations runs ValidateAll when the message has protoc-gen-validate rules.
func ruleViolations(m proto.Message) []string {
	v, ok := m.(interface{ ValidateAll() error })
	if !ok {
		return nil
	}
	err := v.ValidateAll()
	if err == nil {
		return nil
	}
	var multi interface{ AllErrors() []error }
	if errors.As(err, &multi) {
		var out []string
		for _, e := range multi.AllErrors() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// walkAnys visits every set message field below m, depth first, and checks each Any it meets.
func walkAnys(m protoreflect.Message, path string, out *[]string) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsMap() {
			if fd.MapValue().Kind() != protoreflect.MessageKind {
				return true
			}
		} else if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		p := string(fd.Name())
		if path != "" {
			p = path + "." + p
		}
		switch {
		case fd.IsMap():
			var keys []protoreflect.MapKey
			v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			for _, k := range keys {
				visitMessage(v.Map().Get(k).Message(), fmt.Sprintf("%s[%q]", p, k.String()), fd, out)
			}
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				visitMessage(l.Get(i).Message(), fmt.Sprintf("%s[%d]", p, i), fd, out)
			}
		default:
			visitMessage(v.Message(), p, fd, out)
		}
		return true
	})
}

func visitMessage(m protoreflect.Message, path string, fd protoreflect.FieldDescriptor, out *[]string) {
	if m.Descriptor().FullName() != anyFullName {
		walkAnys(m, path, out)
		return
	}
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return
	}
	inner, err := unpackAny(a)
	if err != nil {
		if errors.Is(err, errUnknownType) && fd.FullName() == typedFilterMetadataField {
			return
		}
		*out = append(*out, fmt.Sprintf("%s: %v", path, err))
		return
	}
	typeName := inner.ProtoReflect().Descriptor().FullName()
	for _, e := range ruleViolations(inner) {
		*out = append(*out, fmt.Sprintf("%s (%s): %s", path, typeName, e))
	}
	walkAnys(inner.ProtoReflect(), path, out)
}

// unpackAny decodes an Any with the global registry. A TypedStruct is turned into the message
// it names, the way Envoy reads one.
func unpackAny(a *anypb.Any) (proto.Message, error) {
	if a.GetTypeUrl() == "" {
		return nil, errors.New("google.protobuf.Any without a type URL")
	}
	msg, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{})
	if err != nil {
		if errors.Is(err, protoregistry.NotFound) {
			return nil, fmt.Errorf("%w %q", errUnknownType, a.GetTypeUrl())
		}
		return nil, fmt.Errorf("cannot decode %q: %v", a.GetTypeUrl(), err)
	}
	var tsURL string
	var tsValue *structpb.Struct
	switch ts := msg.(type) {
	case *udpatypev1.TypedStruct:
		tsURL, tsValue = ts.GetTypeUrl(), ts.GetValue()
	case *xdstypev3.TypedStruct:
		tsURL, tsValue = ts.GetTypeUrl(), ts.GetValue()
	default:
		return msg, nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(tsURL)
	if err != nil {
		return nil, fmt.Errorf("TypedStruct names an %w %q", errUnknownType, tsURL)
	}
	js, err := protojson.Marshal(tsValue)
	if err != nil {
		return nil, fmt.Errorf("TypedStruct for %q: %v", tsURL, err)
	}
	target := mt.New().Interface()
	if err := protojson.Unmarshal(js, target); err != nil {
		return nil, fmt.Errorf("TypedStruct value does not fit %q: %v", tsURL, err)
	}
	return target, nil
}

// edsServiceName returns the ClusterLoadAssignment name an EDS cluster asks for.
func edsServiceName(name string, m proto.Message) (string, bool) {
	c, ok := m.(*clusterv3.Cluster)
	if !ok || c.GetType() != clusterv3.Cluster_EDS {
		return "", false
	}
	if s := c.GetEdsClusterConfig().GetServiceName(); s != "" {
		return s, true
	}
	return name, true
}

// networkFilter is one decoded network filter config of a listener.
type networkFilter struct {
	where string
	msg   proto.Message
}

// listenerFilters decodes the network filters of every filter chain, of the default filter
// chain and of the api_listener. Configs that do not decode are skipped: validation reports them.
func listenerFilters(m proto.Message) []networkFilter {
	l, ok := m.(*listenerv3.Listener)
	if !ok {
		return nil
	}
	var out []networkFilter
	addChain := func(prefix string, fc *listenerv3.FilterChain) {
		for j, f := range fc.GetFilters() {
			if f.GetTypedConfig() == nil {
				continue
			}
			if inner, err := unpackAny(f.GetTypedConfig()); err == nil {
				out = append(out, networkFilter{where: fmt.Sprintf("%s.filters[%d] (%s)", prefix, j, f.GetName()), msg: inner})
			}
		}
	}
	for i, fc := range l.GetFilterChains() {
		addChain(fmt.Sprintf("filter_chains[%d]", i), fc)
	}
	if fc := l.GetDefaultFilterChain(); fc != nil {
		addChain("default_filter_chain", fc)
	}
	if a := l.GetApiListener().GetApiListener(); a != nil {
		if inner, err := unpackAny(a); err == nil {
			out = append(out, networkFilter{where: "api_listener", msg: inner})
		}
	}
	return out
}

type hcmUse struct {
	where string
	hcm   *hcmv3.HttpConnectionManager
}

func listenerHCMs(m proto.Message) []hcmUse {
	var out []hcmUse
	for _, f := range listenerFilters(m) {
		if h, ok := f.msg.(*hcmv3.HttpConnectionManager); ok {
			out = append(out, hcmUse{where: f.where, hcm: h})
		}
	}
	return out
}

// checkConsistency adds the problems found across resources: references to clusters, route
// configurations and endpoint assignments that do not exist, duplicate filter chain matches,
// HTTP filter lists that do not end with the router, duplicate virtual hosts and domains.
func checkConsistency(c *collection, timeout string) {
	clusters := c.resources[typeCluster]
	notReceived := func(t, n string) string {
		switch {
		case c.absent[t][n]:
			return "the server reports it does not exist"
		case c.timedOut:
			return "not received within " + timeout
		default:
			return "not received"
		}
	}

	for _, name := range sortedKeys(clusters) {
		m := clusters[name]
		if svc, ok := edsServiceName(name, m); ok {
			if _, ok := c.resources[typeEndpoint][svc]; !ok {
				c.addProblem(typeCluster, name, fmt.Sprintf("EDS cluster needs ClusterLoadAssignment %q: %s", svc, notReceived(typeEndpoint, svc)))
			}
		}
		if ct := m.(*clusterv3.Cluster).GetClusterType().GetTypedConfig(); ct != nil {
			if inner, err := unpackAny(ct); err == nil {
				if agg, ok := inner.(*aggregatev3.ClusterConfig); ok {
					for _, n := range agg.GetClusters() {
						if _, ok := clusters[n]; !ok {
							c.addProblem(typeCluster, name, fmt.Sprintf("aggregate cluster names cluster %q, which is not in CDS", n))
						}
					}
				}
			}
		}
	}

	listeners := c.resources[typeListener]
	for _, name := range sortedKeys(listeners) {
		add := func(msg string) { c.addProblem(typeListener, name, msg) }
		for _, f := range listenerFilters(listeners[name]) {
			switch cfg := f.msg.(type) {
			case *hcmv3.HttpConnectionManager:
				if rn := cfg.GetRds().GetRouteConfigName(); rn != "" {
					if _, ok := c.resources[typeRoute][rn]; !ok {
						add(fmt.Sprintf("%s: RDS route configuration %q: %s", f.where, rn, notReceived(typeRoute, rn)))
					}
				}
				if rc := cfg.GetRouteConfig(); rc != nil {
					checkRouteConfig(rc, clusters, func(msg string) { add(f.where + ": route_config: " + msg) })
				}
				checkHTTPFilters(cfg, func(msg string) { add(f.where + ": " + msg) })
				for i, hf := range cfg.GetHttpFilters() {
					inner, err := unpackAny(hf.GetTypedConfig())
					if err != nil {
						continue
					}
					for _, cl := range filterClusters(inner) {
						if _, ok := clusters[cl]; !ok {
							add(fmt.Sprintf("%s: http_filters[%d] %s names cluster %q, which is not in CDS", f.where, i, hf.GetName(), cl))
						}
					}
				}
			case *netextauthzv3.ExtAuthz:
				for _, cl := range filterClusters(cfg) {
					if _, ok := clusters[cl]; !ok {
						add(fmt.Sprintf("%s: ext_authz names cluster %q, which is not in CDS", f.where, cl))
					}
				}
			case *tcpproxyv3.TcpProxy:
				if cl := cfg.GetCluster(); cl != "" {
					if _, ok := clusters[cl]; !ok {
						add(fmt.Sprintf("%s: tcp_proxy cluster %q is not in CDS", f.where, cl))
					}
				}
				for i, w := range cfg.GetWeightedClusters().GetClusters() {
					if _, ok := clusters[w.GetName()]; !ok {
						add(fmt.Sprintf("%s: tcp_proxy weighted_clusters.clusters[%d] %q is not in CDS", f.where, i, w.GetName()))
					}
				}
			}
		}
		checkFilterChainMatches(listeners[name].(*listenerv3.Listener), add)
	}

	checkSecrets(c, notReceived)

	routes := c.resources[typeRoute]
	for _, name := range sortedKeys(routes) {
		checkRouteConfig(routes[name].(*routev3.RouteConfiguration), clusters, func(msg string) {
			c.addProblem(typeRoute, name, msg)
		})
	}
}

// filterClusters: the clusters a filter's typed config names (remote key sets of jwt_authn
// providers, external authorization services).
func filterClusters(m proto.Message) []string {
	var out []string
	switch cfg := m.(type) {
	case *jwtauthnv3.JwtAuthentication:
		for _, name := range sortedKeys(cfg.GetProviders()) {
			if cl := cfg.GetProviders()[name].GetRemoteJwks().GetHttpUri().GetCluster(); cl != "" {
				out = append(out, cl)
			}
		}
	case *extauthzv3.ExtAuthz:
		if cl := cfg.GetHttpService().GetServerUri().GetCluster(); cl != "" {
			out = append(out, cl)
		}
		if cl := cfg.GetGrpcService().GetEnvoyGrpc().GetClusterName(); cl != "" {
			out = append(out, cl)
		}
	case *netextauthzv3.ExtAuthz:
		if cl := cfg.GetGrpcService().GetEnvoyGrpc().GetClusterName(); cl != "" {
			out = append(out, cl)
		}
	}
	return out
}

// checkHTTPFilters: the router must be the last HTTP filter and appear nowhere else.
func checkHTTPFilters(h *hcmv3.HttpConnectionManager, add func(string)) {
	filters := h.GetHttpFilters()
	if len(filters) == 0 {
		add("http_filters is empty; it must end with the router filter " + routerFilterName)
		return
	}
	isRouter := func(f *hcmv3.HttpFilter) bool {
		return f.GetName() == routerFilterName || f.GetTypedConfig().GetTypeUrl() == routerTypeURL
	}
	for i, f := range filters[:len(filters)-1] {
		if isRouter(f) {
			add(fmt.Sprintf("http_filters[%d] is the router filter but is not the last HTTP filter", i))
		}
	}
	if last := filters[len(filters)-1]; !isRouter(last) {
		add(fmt.Sprintf("http_filters must end with the router filter %s; the last is %q", routerFilterName, last.GetName()))
	}
}

// checkRouteConfig: unique virtual host names, no domain twice, every cluster named exists.
func checkRouteConfig(rc *routev3.RouteConfiguration, clusters map[string]proto.Message, add func(string)) {
	missing := func(where, cl string) {
		if _, ok := clusters[cl]; !ok {
			add(fmt.Sprintf("%s names cluster %q, which is not in CDS", where, cl))
		}
	}
	mirrors := func(where string, ps []*routev3.RouteAction_RequestMirrorPolicy) {
		for i, p := range ps {
			if p.GetCluster() != "" {
				missing(fmt.Sprintf("%srequest_mirror_policies[%d]", where, i), p.GetCluster())
			}
		}
	}
	mirrors("", rc.GetRequestMirrorPolicies())

	vhostNames := map[string]int{}
	domains := map[string]string{}
	for i, vh := range rc.GetVirtualHosts() {
		vhLabel := fmt.Sprintf("virtual host %q", vh.GetName())
		if j, dup := vhostNames[vh.GetName()]; dup {
			add(fmt.Sprintf("virtual_hosts[%d] and virtual_hosts[%d] are both named %q", j, i, vh.GetName()))
		} else {
			vhostNames[vh.GetName()] = i
		}
		for _, d := range vh.GetDomains() {
			key := strings.ToLower(d)
			if other, dup := domains[key]; dup {
				add(fmt.Sprintf("domain %q appears more than once (virtual hosts %q and %q)", d, other, vh.GetName()))
			} else {
				domains[key] = vh.GetName()
			}
		}
		mirrors(vhLabel+" ", vh.GetRequestMirrorPolicies())
		for j, r := range vh.GetRoutes() {
			where := fmt.Sprintf("%s routes[%d]", vhLabel, j)
			if r.GetName() != "" {
				where += fmt.Sprintf(" (%q)", r.GetName())
			}
			act := r.GetRoute()
			if act == nil {
				continue
			}
			if cl := act.GetCluster(); cl != "" {
				missing(where, cl)
			}
			for k, w := range act.GetWeightedClusters().GetClusters() {
				if w.GetName() != "" {
					missing(fmt.Sprintf("%s weighted_clusters.clusters[%d]", where, k), w.GetName())
				}
			}
			mirrors(where+" ", act.GetRequestMirrorPolicies())
		}
	}
}

// maxMatchCombinations bounds the expansion of one filter chain match; a match beyond it is
// compared only for exact equality.
const maxMatchCombinations = 100000

// checkFilterChainMatches reports filter chains of one listener that Envoy could not tell apart:
// the same filter_chain_match twice, or two matches that share a full combination of
// destination port, destination range, server name, transport protocol, application protocol,
// direct source range, source type, source range and source port.
func checkFilterChainMatches(l *listenerv3.Listener, add func(string)) {
	if l.GetFilterChainMatcher() != nil {
		return // filter_chain_match is not used to select chains then
	}
	chains := l.GetFilterChains()
	matches := make([]*listenerv3.FilterChainMatch, len(chains))
	for i, fc := range chains {
		matches[i] = fc.GetFilterChainMatch()
		if matches[i] == nil {
			matches[i] = &listenerv3.FilterChainMatch{}
		}
	}
	reported := map[[2]int]bool{}
	for i := range matches {
		for j := i + 1; j < len(matches); j++ {
			if proto.Equal(matches[i], matches[j]) {
				reported[[2]int{i, j}] = true
				add(fmt.Sprintf("filter_chains[%d] and filter_chains[%d] have the same filter_chain_match", i, j))
			}
		}
	}
	owner := map[string]int{}
	for i, m := range matches {
		keys, ok := matchCombinations(m)
		if !ok {
			continue
		}
		for _, k := range keys {
			j, seen := owner[k]
			if !seen {
				owner[k] = i
				continue
			}
			if j == i || reported[[2]int{j, i}] {
				continue
			}
			reported[[2]int{j, i}] = true
			add(fmt.Sprintf("filter_chains[%d] and filter_chains[%d] have overlapping filter_chain_match rules (both match %s)", j, i, describeCombination(k)))
		}
	}
}

var matchDimensions = []string{"destination_port", "prefix_ranges", "server_names", "transport_protocol",
	"application_protocols", "direct_source_prefix_ranges", "source_type", "source_prefix_ranges", "source_ports"}

// matchCombinations expands a match into one key per combination of its criteria; an empty
// criterion is a wildcard, which is its own key.
func matchCombinations(m *listenerv3.FilterChainMatch) ([]string, bool) {
	dport := ""
	if m.GetDestinationPort() != nil {
		dport = strconv.FormatUint(uint64(m.GetDestinationPort().GetValue()), 10)
	}
	var sports []string
	for _, p := range m.GetSourcePorts() {
		sports = append(sports, strconv.FormatUint(uint64(p), 10))
	}
	sourceType := ""
	if m.GetSourceType() != listenerv3.FilterChainMatch_ANY {
		sourceType = m.GetSourceType().String()
	}
	dims := [][]string{
		{dport},
		cidrs(m.GetPrefixRanges()),
		m.GetServerNames(),
		{m.GetTransportProtocol()},
		m.GetApplicationProtocols(),
		cidrs(m.GetDirectSourcePrefixRanges()),
		{sourceType},
		cidrs(m.GetSourcePrefixRanges()),
		sports,
	}
	total := 1
	for i, d := range dims {
		d = uniq(d)
		if len(d) == 0 {
			d = []string{""}
		}
		dims[i] = d
		total *= len(d)
		if total > maxMatchCombinations {
			return nil, false
		}
	}
	keys := []string{""}
	for i, d := range dims {
		next := make([]string, 0, len(keys)*len(d))
		for _, k := range keys {
			for _, v := range d {
				if i == 0 {
					next = append(next, v)
				} else {
					next = append(next, k+"\x00"+v)
				}
			}
		}
		keys = next
	}
	return keys, true
}

func describeCombination(key string) string {
	parts := strings.Split(key, "\x00")
	var out []string
	for i, p := range parts {
		if p != "" && i < len(matchDimensions) {
			out = append(out, matchDimensions[i]+"="+p)
		}
	}
	if len(out) == 0 {
		return "everything"
	}
	return strings.Join(out, " ")
}

// cidrs renders ranges the way Envoy reads them: the address masked to the prefix length, an
// unset length being 0.
func cidrs(rs []*corev3.CidrRange) []string {
	var out []string
	for _, r := range rs {
		plen := int(r.GetPrefixLen().GetValue())
		addr, err := netip.ParseAddr(r.GetAddressPrefix())
		if err != nil || plen > addr.BitLen() {
			out = append(out, fmt.Sprintf("%s/%d", r.GetAddressPrefix(), plen))
			continue
		}
		p, _ := addr.Prefix(plen)
		out = append(out, p.String())
	}
	return out
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
