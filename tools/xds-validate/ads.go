package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Type URLs of the four resource kinds an Envoy sidecar asks for over ADS.
const (
	typeCluster  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	typeListener = "type.googleapis.com/envoy.config.listener.v3.Listener"
	typeEndpoint = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	typeRoute    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

	// typeResourceWrapper may wrap a resource in a state-of-the-world response as well.
	typeResourceWrapper = "type.googleapis.com/envoy.service.discovery.v3.Resource"
)

// allTypes lists the resource kinds in the order Envoy subscribes to them.
var allTypes = []string{typeCluster, typeEndpoint, typeListener, typeRoute, typeSecret}

// fullStateTypes are the wildcard kinds whose state-of-the-world response replaces everything
// known before; a response for one of the others only adds or updates the resources it carries.
var fullStateTypes = map[string]bool{typeCluster: true, typeListener: true}

// collectOptions tells collect how to talk to the control plane.
type collectOptions struct {
	Node    *corev3.Node
	Delta   bool
	Quiet   time.Duration // how long no response may change anything once everything named arrived
	Dump    bool          // keep the protojson of every resource received
	Timeout time.Duration // only for messages; the deadline itself is on the context
	// Listeners asked for by name instead of a wildcard (a proxyless gRPC client names the targets
	// it dials and its server listeners).
	Listeners []string
}

// problem is one finding: a resource that could not be decoded, failed validation or
// references something that does not exist.
type problem struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

// collection is what one ADS session received.
type collection struct {
	// resources holds the current state: type URL -> resource name -> decoded resource.
	resources map[string]map[string]proto.Message
	// received tells which types have had at least one response.
	received map[string]bool
	// subscribed holds the names asked for by name (EDS and RDS), sorted.
	subscribed map[string][]string
	// absent holds names the server said (delta removed_resources) do not exist.
	absent map[string]map[string]bool
	// problems found while receiving, in order, without repeats.
	problems []problem
	seen     map[problem]bool
	// dump holds protojson per type and name when asked for.
	dump map[string]map[string][]byte
	// timedOut is set when the deadline came before the set was complete and quiet.
	timedOut bool
	keepDump bool
}

func newCollection(keepDump bool) *collection {
	c := &collection{
		resources:  map[string]map[string]proto.Message{},
		received:   map[string]bool{},
		subscribed: map[string][]string{},
		absent:     map[string]map[string]bool{},
		seen:       map[problem]bool{},
		dump:       map[string]map[string][]byte{},
		keepDump:   keepDump,
	}
	for _, t := range allTypes {
		c.resources[t] = map[string]proto.Message{}
		c.absent[t] = map[string]bool{}
	}
	return c
}

func (c *collection) addProblem(typeURL, name, msg string) {
	p := problem{Type: typeURL, Name: name, Message: msg}
	if c.seen[p] {
		return
	}
	c.seen[p] = true
	c.problems = append(c.problems, p)
}

// resubscribe records a new by-name subscription of a dependent type. What is no longer asked
// for is forgotten, as Envoy forgets a route configuration no listener names any more: a name
// that was dropped (its listener or cluster went) is neither checked nor reported.
func (c *collection) resubscribe(typeURL string, names []string) {
	c.subscribed[typeURL] = names
	for n := range c.absent[typeURL] {
		if !slices.Contains(names, n) {
			delete(c.absent[typeURL], n)
		}
	}
	for n := range c.resources[typeURL] {
		if !slices.Contains(names, n) {
			delete(c.resources[typeURL], n)
			delete(c.dump[typeURL], n)
		}
	}
}

// rawResource is one resource as it came off the wire.
type rawResource struct {
	name string // the delta Resource.name; empty in state of the world
	any  *anypb.Any
}

// incoming is a response of either protocol variant, reduced to what the client acts on.
type incoming struct {
	typeURL   string
	version   string
	nonce     string
	resources []rawResource
	removed   []string
	fullState bool
}

// apply decodes and validates the resources of one response and updates the state. It returns
// the error detail for a NACK, or "" when the response is to be ACKed.
//
// changed tells whether the response altered the state; a server that sends the same thing
// again (as some do after a NACK) does not hold off the end of the session that way.
func (c *collection) apply(in *incoming) (detail string, changed bool) {
	changed = !c.received[in.typeURL] // the first response of a type is news even when empty
	c.received[in.typeURL] = true
	var rejects []string
	reject := func(name, msg string) {
		c.addProblem(in.typeURL, name, msg)
		if name == "" {
			rejects = append(rejects, msg)
		} else {
			rejects = append(rejects, fmt.Sprintf("%s: %s", name, msg))
		}
	}

	decoded := map[string]proto.Message{}
	for i, raw := range in.resources {
		msg, name, err := decodeResource(in.typeURL, raw)
		if err != nil {
			label := raw.name
			if label == "" {
				label = fmt.Sprintf("#%d", i)
			}
			reject(label, err.Error())
			continue
		}
		if _, dup := decoded[name]; dup {
			reject(name, fmt.Sprintf("resource name %q appears more than once in one response", name))
			continue
		}
		decoded[name] = msg
		for _, v := range validateResource(msg) {
			reject(name, v)
		}
		if c.keepDump {
			c.keepJSON(in.typeURL, name, msg)
		}
	}

	current := c.resources[in.typeURL]
	if in.fullState {
		if len(current) != len(decoded) {
			changed = true
		}
		c.resources[in.typeURL] = decoded
	}
	for name, msg := range decoded {
		if old, ok := current[name]; !ok || !proto.Equal(old, msg) {
			changed = true
		}
		if !in.fullState {
			current[name] = msg
			delete(c.absent[in.typeURL], name)
		}
	}
	for _, name := range in.removed {
		if _, ok := c.resources[in.typeURL][name]; ok {
			changed = true
			delete(c.resources[in.typeURL], name)
		}
		if slices.Contains(c.subscribed[in.typeURL], name) && !c.absent[in.typeURL][name] {
			changed = true
			c.absent[in.typeURL][name] = true
		}
	}
	if len(rejects) == 0 {
		return "", changed
	}
	return strings.Join(rejects, "; "), changed
}

// edsNames returns the sorted ClusterLoadAssignment names the current clusters need.
func (c *collection) edsNames() []string {
	set := map[string]bool{}
	for name, m := range c.resources[typeCluster] {
		if n, ok := edsServiceName(name, m); ok {
			set[n] = true
		}
	}
	return sortedKeys(set)
}

// rdsNames returns the sorted RouteConfiguration names the current listeners use.
func (c *collection) rdsNames() []string {
	set := map[string]bool{}
	for _, m := range c.resources[typeListener] {
		for _, h := range listenerHCMs(m) {
			if n := h.hcm.GetRds().GetRouteConfigName(); n != "" {
				set[n] = true
			}
		}
	}
	return sortedKeys(set)
}

// missing lists the subscribed names neither received nor known to be absent.
func (c *collection) missing() map[string][]string {
	out := map[string][]string{}
	for _, t := range []string{typeEndpoint, typeRoute, typeSecret} {
		for _, n := range c.subscribed[t] {
			if _, ok := c.resources[t][n]; !ok && !c.absent[t][n] {
				out[t] = append(out[t], n)
			}
		}
	}
	return out
}

// complete reports whether CDS and LDS arrived and every EDS and RDS name asked for was answered.
func (c *collection) complete() bool {
	return c.received[typeCluster] && c.received[typeListener] && len(c.missing()) == 0
}

// transport is one ADS stream in one protocol variant.
type transport interface {
	// subscribe sets the names asked for of one type (nil: wildcard) and tells the server.
	subscribe(typeURL string, names []string) error
	// respond ACKs a response, or NACKs it when detail is not empty.
	respond(in *incoming, detail string) error
	// recv waits for the next response.
	recv() (*incoming, error)
}

type sotwTransport struct {
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
	acked  map[string]string   // last accepted version per type
	nonce  map[string]string   // last nonce seen per type
	names  map[string][]string // current subscription per type
}

func (t *sotwTransport) subscribe(typeURL string, names []string) error {
	t.names[typeURL] = names
	return t.stream.Send(&discoveryv3.DiscoveryRequest{
		Node:          t.node,
		TypeUrl:       typeURL,
		ResourceNames: names,
		VersionInfo:   t.acked[typeURL],
		ResponseNonce: t.nonce[typeURL],
	})
}

func (t *sotwTransport) respond(in *incoming, detail string) error {
	t.nonce[in.typeURL] = in.nonce
	req := &discoveryv3.DiscoveryRequest{
		Node:          t.node,
		TypeUrl:       in.typeURL,
		ResourceNames: t.names[in.typeURL],
		ResponseNonce: in.nonce,
	}
	if detail == "" {
		t.acked[in.typeURL] = in.version
	} else {
		// A NACK carries the last version accepted, as Envoy sends it.
		req.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: detail}
	}
	req.VersionInfo = t.acked[in.typeURL]
	return t.stream.Send(req)
}

func (t *sotwTransport) recv() (*incoming, error) {
	resp, err := t.stream.Recv()
	if err != nil {
		return nil, err
	}
	in := &incoming{
		typeURL:   resp.GetTypeUrl(),
		version:   resp.GetVersionInfo(),
		nonce:     resp.GetNonce(),
		fullState: fullStateTypes[resp.GetTypeUrl()],
	}
	for _, a := range resp.GetResources() {
		in.resources = append(in.resources, rawResource{any: a})
	}
	return in, nil
}

type deltaTransport struct {
	stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	node   *corev3.Node
	names  map[string][]string
	sent   map[string]bool
}

func (t *deltaTransport) subscribe(typeURL string, names []string) error {
	req := &discoveryv3.DeltaDiscoveryRequest{Node: t.node, TypeUrl: typeURL}
	if !t.sent[typeURL] {
		// The first request of a type: no names is a wildcard subscription.
		req.ResourceNamesSubscribe = names
	} else {
		old := t.names[typeURL]
		for _, n := range names {
			if !slices.Contains(old, n) {
				req.ResourceNamesSubscribe = append(req.ResourceNamesSubscribe, n)
			}
		}
		for _, n := range old {
			if !slices.Contains(names, n) {
				req.ResourceNamesUnsubscribe = append(req.ResourceNamesUnsubscribe, n)
			}
		}
		if len(req.ResourceNamesSubscribe) == 0 && len(req.ResourceNamesUnsubscribe) == 0 {
			return nil
		}
	}
	t.sent[typeURL] = true
	t.names[typeURL] = names
	return t.stream.Send(req)
}

func (t *deltaTransport) respond(in *incoming, detail string) error {
	req := &discoveryv3.DeltaDiscoveryRequest{Node: t.node, TypeUrl: in.typeURL, ResponseNonce: in.nonce}
	if detail != "" {
		req.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: detail}
	}
	return t.stream.Send(req)
}

func (t *deltaTransport) recv() (*incoming, error) {
	resp, err := t.stream.Recv()
	if err != nil {
		return nil, err
	}
	in := &incoming{
		typeURL: resp.GetTypeUrl(),
		version: resp.GetSystemVersionInfo(),
		nonce:   resp.GetNonce(),
		removed: resp.GetRemovedResources(),
	}
	for _, r := range resp.GetResources() {
		if r.GetResource() == nil {
			// A name without a body carries no configuration (it is used for aliases).
			continue
		}
		in.resources = append(in.resources, rawResource{name: r.GetName(), any: r.GetResource()})
	}
	return in, nil
}

// recvResult is what the receiving goroutine hands over: a response or the stream's end.
type recvResult struct {
	in  *incoming
	err error
}

// errIncomplete is returned when the deadline passed before CDS and LDS were both received.
var errIncomplete = errors.New("timed out")

// collect opens one ADS stream, subscribes the way Envoy does and returns once everything asked
// for was received and no response changed anything for opts.Quiet, or when ctx ends. It returns an error
// when the stream could not be used, or when ctx ended before CDS and LDS both arrived; in both
// cases the collection holds what was received so far.
func collect(ctx context.Context, conn grpc.ClientConnInterface, opts collectOptions) (*collection, error) {
	c := newCollection(opts.Dump)
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Like Envoy, keep trying to reach a server that is not up (yet) until the deadline.
	client := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	var tr transport
	if opts.Delta {
		s, err := client.DeltaAggregatedResources(streamCtx, grpc.WaitForReady(true))
		if err != nil {
			return c, fmt.Errorf("open DeltaAggregatedResources stream: %w", err)
		}
		tr = &deltaTransport{stream: s, node: opts.Node, names: map[string][]string{}, sent: map[string]bool{}}
	} else {
		s, err := client.StreamAggregatedResources(streamCtx, grpc.WaitForReady(true))
		if err != nil {
			return c, fmt.Errorf("open StreamAggregatedResources stream: %w", err)
		}
		tr = &sotwTransport{stream: s, node: opts.Node, acked: map[string]string{}, nonce: map[string]string{}, names: map[string][]string{}}
	}

	if err := tr.subscribe(typeCluster, nil); err != nil {
		return c, fmt.Errorf("send on ADS stream: %w", err)
	}
	if len(opts.Listeners) > 0 {
		c.subscribed[typeListener] = opts.Listeners
	}
	if err := tr.subscribe(typeListener, opts.Listeners); err != nil {
		return c, fmt.Errorf("send on ADS stream: %w", err)
	}

	responses := make(chan recvResult)
	go func() {
		for {
			in, err := tr.recv()
			select {
			case responses <- recvResult{in, err}:
			case <-streamCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	quiet := time.NewTimer(opts.Quiet)
	defer quiet.Stop()

	// follow updates the by-name subscription of a dependent type when its set of names changed.
	follow := func(typeURL string, names []string) error {
		if slices.Equal(names, c.subscribed[typeURL]) {
			return nil
		}
		had := len(c.subscribed[typeURL]) > 0
		c.resubscribe(typeURL, names)
		if len(names) == 0 && !opts.Delta {
			// An empty list would read as a wildcard in state of the world: stop asking instead.
			return nil
		}
		if len(names) == 0 && !had {
			return nil
		}
		return tr.subscribe(typeURL, names)
	}

	// deadline ends the session when ctx is done: what arrived is still validated as long as
	// CDS and LDS did.
	deadline := func() error {
		c.timedOut = true
		if c.received[typeCluster] && c.received[typeListener] {
			return nil
		}
		var waiting []string
		for _, t := range []string{typeCluster, typeListener} {
			if !c.received[t] {
				waiting = append(waiting, shortType(t))
			}
		}
		return fmt.Errorf("%w after %s waiting for %s", errIncomplete, opts.Timeout, strings.Join(waiting, " and "))
	}

	// pastDeadline: the stream ended because the session's deadline passed. The server enforces the
	// same deadline (grpc-timeout) by its own clock and may end the stream (DEADLINE_EXCEEDED) a
	// moment before ctx is done here.
	pastDeadline := func(err error) bool {
		return ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded
	}

	for {
		select {
		case <-ctx.Done():
			return c, deadline()
		case r := <-responses:
			if r.err != nil {
				if pastDeadline(r.err) {
					return c, deadline()
				}
				return c, fmt.Errorf("ADS stream failed: %w", r.err)
			}
			in := r.in
			known := slices.Contains(allTypes, in.typeURL)
			if !known {
				// Envoy ignores a type it did not ask for; so does this client, without an ACK.
				c.addProblem(in.typeURL, "", "response for a type that was not subscribed (ignored)")
				continue
			}
			detail, changed := c.apply(in)
			// As Envoy does: ask for what the update needs before ACKing the update itself.
			var err error
			switch in.typeURL {
			case typeCluster:
				err = follow(typeEndpoint, c.edsNames())
				if err == nil {
					err = follow(typeSecret, c.sdsNames())
				}
			case typeListener:
				err = follow(typeRoute, c.rdsNames())
				if err == nil {
					err = follow(typeSecret, c.sdsNames())
				}
			}
			if err == nil {
				err = tr.respond(in, detail)
			}
			if err != nil {
				if ctx.Err() != nil {
					return c, deadline()
				}
				err = sendFailure(ctx, err, responses)
				if pastDeadline(err) {
					return c, deadline()
				}
				return c, err
			}
			if changed || !c.complete() {
				quiet.Reset(opts.Quiet) // since Go 1.23 Reset also discards a pending expiry
			}
		case <-quiet.C:
			if c.complete() {
				return c, nil
			}
		}
	}
}

// sendFailure explains a failed Send. io.EOF only says the stream is gone; the reason, the
// status the server ended it with, comes from the receiving side.
func sendFailure(ctx context.Context, err error, responses <-chan recvResult) error {
	if errors.Is(err, io.EOF) {
		for {
			select {
			case r := <-responses:
				if r.err != nil {
					return fmt.Errorf("ADS stream failed: %w", r.err)
				}
			case <-ctx.Done():
				return fmt.Errorf("send on ADS stream: %w", err)
			}
		}
	}
	return fmt.Errorf("send on ADS stream: %w", err)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// shortType turns a type URL into the message name without its package.
func shortType(typeURL string) string {
	if i := strings.LastIndexByte(typeURL, '.'); i >= 0 {
		return typeURL[i+1:]
	}
	return typeURL
}
