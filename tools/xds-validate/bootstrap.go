package main

import (
	"fmt"
	"os"
	"sort"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

const bootstrapType = "type.googleapis.com/envoy.config.bootstrap.v3.Bootstrap"

// validateBootstrapFile checks an Envoy bootstrap file (JSON) the way Envoy loads one: strict
// protojson decoding (unknown fields and unknown Any types are errors), protoc-gen-validate rules
// on the bootstrap and on every message packed in an Any inside it, and references: every cluster
// an ADS, SDS or other gRPC config source, or a static route, names must be a static cluster, and
// static cluster and listener names are unique.
func validateBootstrapFile(path string) (*report, int) {
	rep := &report{Resources: map[string][]string{}}
	add := func(name, msg string) {
		rep.Errors = append(rep.Errors, problem{Type: bootstrapType, Name: name, Message: msg})
	}
	body, err := os.ReadFile(path)
	if err != nil {
		rep.Errors = append(rep.Errors, problem{Type: "connection", Name: path, Message: err.Error()})
		return rep, exitTransport
	}
	var b bootstrapv3.Bootstrap
	if err := (protojson.UnmarshalOptions{}).Unmarshal(body, &b); err != nil {
		add(path, "does not decode as an Envoy v3 Bootstrap: "+err.Error())
		return rep, exitInvalid
	}
	for _, e := range validateResource(&b) {
		add(path, e)
	}
	if b.GetNode().GetId() == "" {
		add("node.id", "the node has no id")
	}
	clusters := map[string]bool{}
	for _, c := range b.GetStaticResources().GetClusters() {
		if clusters[c.GetName()] {
			add(c.GetName(), "static cluster name used twice")
		}
		clusters[c.GetName()] = true
		rep.Resources["clusters"] = append(rep.Resources["clusters"], c.GetName())
	}
	listeners := map[string]bool{}
	for _, l := range b.GetStaticResources().GetListeners() {
		if listeners[l.GetName()] {
			add(l.GetName(), "static listener name used twice")
		}
		listeners[l.GetName()] = true
		rep.Resources["listeners"] = append(rep.Resources["listeners"], l.GetName())
	}
	rep.Counts.Clusters, rep.Counts.Listeners = len(clusters), len(listeners)
	var named []string
	collectClusterRefs(b.ProtoReflect(), &named)
	sort.Strings(named)
	for _, n := range uniq(named) {
		rep.Resources["references"] = append(rep.Resources["references"], n)
		if !clusters[n] {
			add(n, fmt.Sprintf("cluster %q is named by the bootstrap but is not one of its static clusters", n))
		}
	}
	if len(rep.Errors) > 0 {
		return rep, exitInvalid
	}
	rep.OK = true
	return rep, exitOK
}

// collectClusterRefs walks m (through Anys) for gRPC services' envoy_grpc cluster names and
// route actions' clusters.
func collectClusterRefs(m protoreflect.Message, out *[]string) {
	switch v := m.Interface().(type) {
	case *corev3.GrpcService:
		if eg := v.GetEnvoyGrpc(); eg != nil {
			*out = append(*out, eg.GetClusterName())
		}
	case *routev3.RouteAction:
		if c := v.GetCluster(); c != "" {
			*out = append(*out, c)
		}
		for _, w := range v.GetWeightedClusters().GetClusters() {
			*out = append(*out, w.GetName())
		}
	case *anypb.Any:
		if inner, err := unpackAny(v); err == nil {
			collectClusterRefs(inner.ProtoReflect(), out)
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				val.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					collectClusterRefs(mv.Message(), out)
					return true
				})
			}
		case fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind:
		case fd.IsList():
			for i := 0; i < val.List().Len(); i++ {
				collectClusterRefs(val.List().Get(i).Message(), out)
			}
		default:
			collectClusterRefs(val.Message(), out)
		}
		return true
	})
}

var _ proto.Message = (*bootstrapv3.Bootstrap)(nil)
