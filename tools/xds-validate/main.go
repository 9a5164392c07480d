// Command xds-validate connects to the mesh-discovery daemon as an Envoy sidecar would, over one
// ADS stream, takes the whole configuration it is given (CDS, LDS, then the EDS and RDS resources
// those name), ACKs or NACKs each response like Envoy, and checks the result: protoc-gen-validate
// rules on every resource and on every message packed in an Any inside it, and the references
// between resources. It writes a JSON report and exits 0 when all is well, 1 when something is
// wrong with the configuration, 2 when no usable configuration could be had (connection
// failure, stream failure, timeout before CDS and LDS arrived, bad flags).
package main

//go:generate go run gen_registry.go

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	exitOK        = 0
	exitInvalid   = 1
	exitTransport = 2

	envoyAPIModule = "github.com/envoyproxy/go-control-plane/envoy"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	addr      string
	nodeID    string
	metadata  string
	cluster   string
	locality  string
	timeout   time.Duration
	quiet     time.Duration
	delta     bool
	out       string
	dump      bool
	bootstrap string
	listeners string
}

func run(args []string, stdout, stderr io.Writer) int {
	var cfg config
	fs := flag.NewFlagSet("xds-validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:15010", "ADS server address (host:port, plaintext gRPC)")
	fs.StringVar(&cfg.nodeID, "node-id", "sidecar~10.1.0.5~echo-v1-abc.default~default.svc.cluster.local", "node.id to present")
	fs.StringVar(&cfg.metadata, "metadata", `{"CLUSTER_ID":"Cluster","NAMESPACE":"default","LABELS":{"app":"echo","version":"v1"}}`, "node.metadata as a JSON object")
	fs.StringVar(&cfg.cluster, "cluster", "", "node.cluster to present")
	fs.StringVar(&cfg.locality, "locality", "", "node.locality as region/zone/subzone (trailing parts may be left out)")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "give up after this long")
	fs.DurationVar(&cfg.quiet, "quiet", 500*time.Millisecond, "settled once every resource named has arrived and no response changed anything for this long")
	fs.BoolVar(&cfg.delta, "delta", false, "use DeltaAggregatedResources (incremental xDS) instead of StreamAggregatedResources")
	fs.StringVar(&cfg.out, "out", "", "write the JSON report to this file (default: stdout)")
	fs.BoolVar(&cfg.dump, "dump", false, `add every resource received, as protojson, to the report under "dump"`)
	fs.StringVar(&cfg.bootstrap, "bootstrap", "", "check this Envoy bootstrap file (JSON) instead of connecting to a server")
	fs.StringVar(&cfg.listeners, "listeners", "", "comma-separated Listener names to ask for by name instead of a wildcard (proxyless gRPC clients and servers)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: xds-validate [flags]

Connects to an ADS server as an Envoy sidecar, fetches CDS, LDS and the EDS and RDS resources
they name, validates everything and writes a JSON report:
  {"ok":bool,"counts":{"clusters":n,"endpoints":n,"listeners":n,"routes":n},
   "errors":[{"type":"...","name":"...","message":"..."}],"resources":{"<typeUrl>":["name",...]}}
Exit status: 0 valid, 1 configuration errors, 2 connection/stream/timeout failure or bad flags.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitTransport
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "xds-validate: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return exitTransport
	}
	if cfg.bootstrap != "" {
		rep, code := validateBootstrapFile(cfg.bootstrap)
		return writeReport(rep, code, cfg, stdout, stderr)
	}
	node, err := buildNode(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "xds-validate: %v\n", err)
		return exitTransport
	}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	rep, code := validateServer(ctx, cfg.addr, collectOptions{
		Node: node, Delta: cfg.delta, Quiet: cfg.quiet, Dump: cfg.dump, Timeout: cfg.timeout,
		Listeners: splitNames(cfg.listeners),
	})
	return writeReport(rep, code, cfg, stdout, stderr)
}

func writeReport(rep *report, code int, cfg config, stdout, stderr io.Writer) int {

	body, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "xds-validate: encode report: %v\n", err)
		return exitTransport
	}
	body = append(body, '\n')
	if cfg.out == "" || cfg.out == "-" {
		_, err = stdout.Write(body)
	} else {
		err = os.WriteFile(cfg.out, body, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "xds-validate: write report: %v\n", err)
		return exitTransport
	}
	fmt.Fprintln(stderr, summary(rep, code))
	return code
}

func summary(rep *report, code int) string {
	counts := fmt.Sprintf("clusters=%d endpoints=%d listeners=%d routes=%d",
		rep.Counts.Clusters, rep.Counts.Endpoints, rep.Counts.Listeners, rep.Counts.Routes)
	switch code {
	case exitOK:
		return "xds-validate: ok (" + counts + ")"
	case exitInvalid:
		return fmt.Sprintf("xds-validate: %d error(s) (%s)", len(rep.Errors), counts)
	default:
		msg := "failed"
		if n := len(rep.Errors); n > 0 {
			msg = rep.Errors[n-1].Message
		}
		return "xds-validate: " + msg
	}
}

// buildNode assembles the node the way an Envoy sidecar presents itself.
func buildNode(cfg config) (*corev3.Node, error) {
	node := &corev3.Node{
		Id:            cfg.nodeID,
		Cluster:       cfg.cluster,
		UserAgentName: "envoy",
		ClientFeatures: []string{
			"envoy.lb.does_not_support_overprovisioning",
			"envoy.lrs.supports_send_all_clusters",
		},
	}
	if v := apiVersion(); v != nil {
		node.UserAgentVersionType = &corev3.Node_UserAgentBuildVersion{
			UserAgentBuildVersion: &corev3.BuildVersion{Version: v},
		}
	}
	if strings.TrimSpace(cfg.metadata) != "" {
		md := &structpb.Struct{}
		if err := protojson.Unmarshal([]byte(cfg.metadata), md); err != nil {
			return nil, fmt.Errorf("-metadata is not a JSON object: %v", err)
		}
		node.Metadata = md
	}
	if cfg.locality != "" {
		parts := strings.SplitN(cfg.locality, "/", 3)
		for len(parts) < 3 {
			parts = append(parts, "")
		}
		node.Locality = &corev3.Locality{Region: parts[0], Zone: parts[1], SubZone: parts[2]}
	}
	return node, nil
}

// apiVersion is the Envoy API version this binary was built against (the version of the Go
// module holding the Envoy API), presented as the Envoy build version.
func apiVersion() *typev3.SemanticVersion {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, d := range info.Deps {
		if d.Path != envoyAPIModule {
			continue
		}
		parts := strings.SplitN(strings.TrimPrefix(d.Version, "v"), ".", 3)
		if len(parts) < 3 {
			return nil
		}
		var nums [3]uint32
		for i, p := range parts {
			if j := strings.IndexAny(p, "-+"); j >= 0 {
				p = p[:j]
			}
			n, err := strconv.ParseUint(p, 10, 32)
			if err != nil {
				return nil
			}
			nums[i] = uint32(n)
		}
		return &typev3.SemanticVersion{MajorNumber: nums[0], MinorNumber: nums[1], Patch: nums[2]}
	}
	return nil
}

// report is the JSON document the tool writes.
type report struct {
	OK        bool                                  `json:"ok"`
	Counts    counts                                `json:"counts"`
	Errors    []problem                             `json:"errors"`
	Resources map[string][]string                   `json:"resources"`
	Dump      map[string]map[string]json.RawMessage `json:"dump,omitempty"`
}

type counts struct {
	Clusters  int `json:"clusters"`
	Endpoints int `json:"endpoints"`
	Listeners int `json:"listeners"`
	Routes    int `json:"routes"`
	Secrets   int `json:"secrets"`
}

// validateServer runs one ADS session against addr and turns it into a report and exit code.
func validateServer(ctx context.Context, addr string, opts collectOptions) (*report, int) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)),
	)
	if err != nil {
		c := newCollection(false)
		return buildReport(c, fmt.Errorf("connect to %s: %w", addr, err), addr, opts.Timeout)
	}
	defer conn.Close()
	c, err := collect(ctx, conn, opts)
	return buildReport(c, err, addr, opts.Timeout)
}

// buildReport checks the collection across resources and renders it. A collection error means
// a transport failure (exit 2); otherwise any problem means invalid configuration (exit 1).
func buildReport(c *collection, collectErr error, addr string, timeout time.Duration) (*report, int) {
	if collectErr == nil {
		checkConsistency(c, timeout.String())
	}
	rep := &report{
		Errors:    []problem{},
		Resources: map[string][]string{},
		Counts: counts{
			Clusters:  len(c.resources[typeCluster]),
			Endpoints: len(c.resources[typeEndpoint]),
			Listeners: len(c.resources[typeListener]),
			Routes:    len(c.resources[typeRoute]),
			Secrets:   len(c.resources[typeSecret]),
		},
	}
	for _, t := range allTypes {
		rep.Resources[t] = sortedKeys(c.resources[t])
	}
	rep.Errors = append(rep.Errors, sortProblems(c.problems)...)
	if c.keepDump {
		rep.Dump = map[string]map[string]json.RawMessage{}
		for t, byName := range c.dump {
			rep.Dump[t] = map[string]json.RawMessage{}
			for n, b := range byName {
				if _, current := c.resources[t][n]; current {
					rep.Dump[t][n] = b
				}
			}
		}
	}
	if collectErr != nil {
		kind := "connection"
		if errors.Is(collectErr, errIncomplete) {
			kind = "timeout"
		}
		rep.Errors = append(rep.Errors, problem{Type: kind, Name: addr, Message: collectErr.Error()})
		return rep, exitTransport
	}
	rep.OK = len(rep.Errors) == 0
	if !rep.OK {
		return rep, exitInvalid
	}
	return rep, exitOK
}

// sortProblems orders problems by resource type (CDS, EDS, LDS, RDS, others), then name, keeping
// the order in which one resource's problems were found.
func sortProblems(ps []problem) []problem {
	rank := func(t string) int {
		for i, a := range allTypes {
			if a == t {
				return i
			}
		}
		return len(allTypes)
	}
	out := append([]problem(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank(out[i].Type), rank(out[j].Type); ri != rj {
			return ri < rj
		}
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// splitNames reads a comma-separated list; empty items are dropped, nil when none is left.
func splitNames(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
