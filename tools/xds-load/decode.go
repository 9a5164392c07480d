package main

// Decoding of only what the load generator checks, straight from the wire format
// (google.golang.org/protobuf/encoding/protowire): resource names, which clusters are EDS
// clusters, which route configurations the listeners' HTTP connection managers name, the routes'
// target clusters and weights, and the endpoint addresses of load assignments. Everything else in
// a resource is skipped without being decoded.
//
// Field numbers (Envoy v3 API):
//
//	Any                   { type_url = 1; value = 2 }
//	Cluster               { name = 1; type = 2 (EDS = 3) }
//	Listener              { name = 1; filter_chains = 3; api_listener = 19; default_filter_chain = 25 }
//	FilterChain           { filters = 3 }          Filter { name = 1; typed_config = 4 }
//	ApiListener           { api_listener = 1 }
//	HttpConnectionManager { rds = 3 }              Rds { route_config_name = 2 }
//	RouteConfiguration    { name = 1; virtual_hosts = 2 }
//	VirtualHost           { name = 1; routes = 3 }
//	Route                 { route = 2; direct_response = 7 }
//	RouteAction           { cluster = 1; weighted_clusters = 3 }
//	WeightedCluster       { clusters = 1 }         ClusterWeight { name = 1; weight = 2 (UInt32Value { value = 1 }) }
//	DirectResponseAction  { status = 1 }
//	ClusterLoadAssignment { cluster_name = 1; endpoints = 2 }
//	LocalityLbEndpoints   { lb_endpoints = 2 }     LbEndpoint { endpoint = 1 }   Endpoint { address = 1 }
//	Address               { socket_address = 1 }   SocketAddress { address = 2; port_value = 3 }

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

const (
	typeCluster  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	typeEndpoint = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	typeListener = "type.googleapis.com/envoy.config.listener.v3.Listener"
	typeRoute    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	typeHCM      = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	// the name table an agent that captures DNS subscribes to (meshd docs/adr/0187): ACKed, counted, not decoded
	typeNameTable = "type.googleapis.com/mesh.v1.dns.NameTable"
)

// kind indexes the four resource types.
type kind int

const (
	cds kind = iota
	eds
	lds
	rds
	numKinds
)

var kindNames = [numKinds]string{"cds", "eds", "lds", "rds"}
var kindURLs = [numKinds]string{typeCluster, typeEndpoint, typeListener, typeRoute}

func kindOf(url string) (kind, bool) {
	for k, u := range kindURLs {
		if u == url {
			return kind(k), true
		}
	}
	return 0, false
}

// resInfo is what the generator knows about one resource.
type resInfo struct {
	name string
	// cds: the cluster is of type EDS.
	isEDS bool
	// lds: route configuration names used by the listener's connection managers.
	routeNames []string
	// rds: virtual host name → signature of its routes; eds: cluster name → ",addr:port,…,".
	signatures map[string]string
	// rds: clusters the routes send traffic to.
	clusters []string
}

// listInfo summarises the resources of one response; shared by every client that received the
// same bytes.
type listInfo struct {
	names         map[string]*resInfo
	edsClusters   []string // sorted
	routeNames    []string // sorted
	routeClusters []string // sorted
	signatures    map[string]string
	// encoded resource_names blocks of requests for edsClusters / routeNames / routeClusters,
	// built once (SotW requests repeat them in every ACK).
	blocks map[string][]byte
	// covers results by names list (a list is immutable once built, so its identity names it)
	covered map[listKey]bool
	mu      sync.Mutex
}

// listKey names a []string by the identity of its backing array and its length.
type listKey struct {
	first *string
	n     int
}

var errTruncated = errors.New("truncated message")

// fields walks the fields of a message, calling fn with the field number, wire type and, for
// length-delimited fields, the payload; for varints v holds the value.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, payload []byte, v uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			p, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			if err := fn(num, typ, p, 0); err != nil {
				return err
			}
			b = b[m:]
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			if err := fn(num, typ, nil, v); err != nil {
				return err
			}
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
		}
	}
	return nil
}

// unpackAny returns the type URL and value of a google.protobuf.Any.
func unpackAny(b []byte) (string, []byte, error) {
	var url string
	var value []byte
	err := fields(b, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			url = string(p)
		case 2:
			value = p
		}
		return nil
	})
	return url, value, err
}

// decodeResource decodes one resource (an Any) of the given kind.
func decodeResource(k kind, anyBytes []byte) (*resInfo, error) {
	url, value, err := unpackAny(anyBytes)
	if err != nil {
		return nil, err
	}
	if url != kindURLs[k] {
		return nil, fmt.Errorf("resource of type %s in a %s response", url, kindNames[k])
	}
	r := &resInfo{}
	switch k {
	case cds:
		err = fields(value, func(num protowire.Number, typ protowire.Type, p []byte, v uint64) error {
			switch {
			case num == 1 && typ == protowire.BytesType:
				r.name = string(p)
			case num == 2 && typ == protowire.VarintType:
				r.isEDS = v == 3
			}
			return nil
		})
	case lds:
		names := map[string]bool{}
		err = fields(value, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
			if typ != protowire.BytesType {
				return nil
			}
			switch num {
			case 1:
				r.name = string(p)
			case 3, 25:
				return chainRouteNames(p, names)
			case 19:
				return fields(p, func(n protowire.Number, t protowire.Type, q []byte, _ uint64) error {
					if n == 1 && t == protowire.BytesType {
						return hcmRouteName(q, names)
					}
					return nil
				})
			}
			return nil
		})
		r.routeNames = sortedKeys(names)
	case rds:
		r.signatures = map[string]string{}
		clusters := map[string]bool{}
		err = fields(value, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
			if typ != protowire.BytesType {
				return nil
			}
			switch num {
			case 1:
				r.name = string(p)
			case 2:
				return virtualHost(p, r.signatures, clusters)
			}
			return nil
		})
		r.clusters = sortedKeys(clusters)
	case eds:
		var addrs []string
		err = fields(value, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
			if typ != protowire.BytesType {
				return nil
			}
			switch num {
			case 1:
				r.name = string(p)
			case 2:
				return localityEndpoints(p, &addrs)
			}
			return nil
		})
		sort.Strings(addrs)
		r.signatures = map[string]string{r.name: "," + strings.Join(addrs, ",") + ","}
	}
	return r, err
}

// chainRouteNames adds the RDS names of a FilterChain's connection managers.
func chainRouteNames(chain []byte, into map[string]bool) error {
	return fields(chain, func(num protowire.Number, typ protowire.Type, filter []byte, _ uint64) error {
		if num != 3 || typ != protowire.BytesType {
			return nil
		}
		return fields(filter, func(n protowire.Number, t protowire.Type, p []byte, _ uint64) error {
			if n == 4 && t == protowire.BytesType {
				return hcmRouteName(p, into)
			}
			return nil
		})
	})
}

// hcmRouteName adds the RDS name of an Any holding an HttpConnectionManager.
func hcmRouteName(anyBytes []byte, into map[string]bool) error {
	url, value, err := unpackAny(anyBytes)
	if err != nil || url != typeHCM {
		return err
	}
	return fields(value, func(num protowire.Number, typ protowire.Type, rdsMsg []byte, _ uint64) error {
		if num != 3 || typ != protowire.BytesType {
			return nil
		}
		return fields(rdsMsg, func(n protowire.Number, t protowire.Type, p []byte, _ uint64) error {
			if n == 2 && t == protowire.BytesType && len(p) > 0 {
				into[string(p)] = true
			}
			return nil
		})
	})
}

// virtualHost records a VirtualHost's route signature under its name, and its target clusters.
func virtualHost(vh []byte, sigs map[string]string, clusters map[string]bool) error {
	var name string
	var routes []string
	err := fields(vh, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			name = string(p)
		case 3:
			s, err := routeSignature(p, clusters)
			if err != nil {
				return err
			}
			routes = append(routes, s)
		}
		return nil
	})
	sigs[name] = strings.Join(routes, ";")
	return err
}

// routeSignature: "cluster", "c1=w1,c2=w2" or "direct:<status>" (the Node driver's format).
func routeSignature(route []byte, clusters map[string]bool) (string, error) {
	sig := "other"
	err := fields(route, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 2:
			sig = "unknown"
			return fields(p, func(n protowire.Number, t protowire.Type, q []byte, _ uint64) error {
				if t != protowire.BytesType {
					return nil
				}
				switch n {
				case 1:
					sig = string(q)
					clusters[sig] = true
				case 3:
					var parts []string
					err := fields(q, func(m protowire.Number, tt protowire.Type, cw []byte, _ uint64) error {
						if m != 1 || tt != protowire.BytesType {
							return nil
						}
						var cname string
						var weight uint64
						err := fields(cw, func(f protowire.Number, ft protowire.Type, x []byte, _ uint64) error {
							if ft != protowire.BytesType {
								return nil
							}
							switch f {
							case 1:
								cname = string(x)
							case 2:
								return fields(x, func(g protowire.Number, gt protowire.Type, _ []byte, v uint64) error {
									if g == 1 && gt == protowire.VarintType {
										weight = v
									}
									return nil
								})
							}
							return nil
						})
						clusters[cname] = true
						parts = append(parts, cname+"="+strconv.FormatUint(weight, 10))
						return err
					})
					sig = strings.Join(parts, ",")
					return err
				}
				return nil
			})
		case 7:
			status := uint64(0)
			err := fields(p, func(n protowire.Number, t protowire.Type, _ []byte, v uint64) error {
				if n == 1 && t == protowire.VarintType {
					status = v
				}
				return nil
			})
			sig = "direct:" + strconv.FormatUint(status, 10)
			return err
		}
		return nil
	})
	return sig, err
}

// localityEndpoints appends "addr:port" of every endpoint of a LocalityLbEndpoints.
func localityEndpoints(b []byte, addrs *[]string) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, lb []byte, _ uint64) error {
		if num != 2 || typ != protowire.BytesType {
			return nil
		}
		return fields(lb, func(n protowire.Number, t protowire.Type, ep []byte, _ uint64) error {
			if n != 1 || t != protowire.BytesType {
				return nil
			}
			return fields(ep, func(m protowire.Number, tt protowire.Type, addr []byte, _ uint64) error {
				if m != 1 || tt != protowire.BytesType {
					return nil
				}
				return fields(addr, func(f protowire.Number, ft protowire.Type, sa []byte, _ uint64) error {
					if f != 1 || ft != protowire.BytesType {
						return nil
					}
					var host string
					var port uint64
					err := fields(sa, func(g protowire.Number, gt protowire.Type, x []byte, v uint64) error {
						switch {
						case g == 2 && gt == protowire.BytesType:
							host = string(x)
						case g == 3 && gt == protowire.VarintType:
							port = v
						}
						return nil
					})
					*addrs = append(*addrs, host+":"+strconv.FormatUint(port, 10))
					return err
				})
			})
		})
	})
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// summarize builds the list summary of decoded resources.
func summarize(res []*resInfo) *listInfo {
	li := &listInfo{names: make(map[string]*resInfo, len(res)), signatures: map[string]string{}, blocks: map[string][]byte{}}
	routeNames := map[string]bool{}
	routeClusters := map[string]bool{}
	for _, r := range res {
		li.names[r.name] = r
		if r.isEDS {
			li.edsClusters = append(li.edsClusters, r.name)
		}
		for _, n := range r.routeNames {
			routeNames[n] = true
		}
		for _, c := range r.clusters {
			routeClusters[c] = true
		}
		for k, v := range r.signatures {
			li.signatures[k] = v
		}
	}
	sort.Strings(li.edsClusters)
	li.routeNames = sortedKeys(routeNames)
	li.routeClusters = sortedKeys(routeClusters)
	return li
}
