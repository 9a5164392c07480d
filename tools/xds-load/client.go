package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

const (
	sotwMethod  = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
	deltaMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
)

// rawCodec passes requests through as their pieces (envelopes are written by hand, wire.go) and reads a
// response where the transport holds it, in the buffers it arrived in: Unmarshal reads what the
// client needs (decoded) while the bytes are still the transport's, so a response of megabytes is
// neither joined nor copied (its resources are, once, when no client received them before).
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	req := *(v.(*request))
	out := make(mem.BufferSlice, len(req))
	for i, p := range req {
		out[i] = mem.SliceBuffer(p)
	}
	return out, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	d := v.(*decoded)
	bufs := make([][]byte, len(data))
	for i, b := range data {
		bufs[i] = b.ReadOnlyData()
	}
	d.read(bufs, data.Len())
	return nil
}

func (rawCodec) Name() string { return "raw" }

// decoded is what a client keeps of one response; filled by rawCodec.Unmarshal.
type decoded struct {
	c       *client
	at      int64
	size    int
	kind    kind
	version string
	nonce   string
	removed []string
	info    *listInfo
	err     error
	// a name table (typeNameTable): ACKed and counted only
	nameTable bool
}

func (d *decoded) read(bufs [][]byte, size int) {
	d.at = now()
	d.size = size
	delta := d.c.d.cfg.Delta
	r, err := parseResponse(bufs, delta, d.c.d.memo.seed)
	if err != nil {
		d.err = fmt.Errorf("malformed response: %w", err)
		return
	}
	if r.typeURL == typeNameTable {
		d.nameTable, d.version, d.nonce = true, r.version, r.nonce
		return
	}
	k, ok := kindOf(r.typeURL)
	if !ok {
		d.err = fmt.Errorf("response of unknown type %s", r.typeURL)
		return
	}
	d.kind, d.version, d.nonce, d.removed = k, r.version, r.nonce, r.removed
	d.info, d.err = d.c.d.memo.info(k, r, bufs, delta)
	if d.err != nil {
		d.err = fmt.Errorf("%s response: %w", kindNames[k], d.err)
	}
}

// watch is one client's subscription of one type and what it holds of it.
type watch struct {
	started bool
	// names subscribed (nil: wildcard); SotW requests repeat namesBlock in every ACK.
	names      []string
	namesBlock []byte
	version    string
	nonce      string
	// base is the last response that carried the whole state; extra holds resources received
	// since in responses that carried only some (SotW EDS/RDS, delta): a nil value is a removal.
	base  *listInfo
	extra map[string]*resInfo
}

// has reports whether the client holds resource n.
func (w *watch) has(n string) bool {
	if r, ok := w.extra[n]; ok {
		return r != nil
	}
	return w.base != nil && w.base.names[n] != nil
}

// holds reports whether the client holds every one of names.
func (w *watch) holds(names []string) bool {
	if len(names) == 0 {
		return true
	}
	if w == nil || w.base == nil {
		return false
	}
	if len(w.extra) == 0 {
		return w.base.covers(names)
	}
	for _, n := range names {
		if !w.has(n) {
			return false
		}
	}
	return true
}

// view is the list summary of everything the watch holds (base when nothing came since).
func (w *watch) view() *listInfo {
	if w.base == nil || len(w.extra) == 0 {
		return w.base
	}
	res := make([]*resInfo, 0, len(w.base.names)+len(w.extra))
	for n, r := range w.base.names {
		if _, ok := w.extra[n]; !ok {
			res = append(res, r)
		}
	}
	for _, r := range w.extra {
		if r != nil {
			res = append(res, r)
		}
	}
	return summarize(res)
}

type client struct {
	d        *driver
	idx      int
	spec     ClientSpec
	node     []byte // encoded Node; sent with the first request only
	stream   grpc.ClientStream
	watches  [numKinds]*watch
	openedAt int64
	// set once, read by the driver
	completedAt atomic.Int64
	failed      atomic.Pointer[string]
	closing     atomic.Bool
}

func (c *client) fail(msg string) {
	if c.closing.Load() {
		return
	}
	if c.failed.CompareAndSwap(nil, &msg) {
		c.d.failedStreams.Add(1)
		c.d.error(msg)
	}
}

// run opens the stream, subscribes, and answers responses until the stream ends.
func (c *client) run(ctx context.Context, conn *grpc.ClientConn, opened chan<- struct{}) {
	method := sotwMethod
	if c.d.cfg.Delta {
		method = deltaMethod
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodecV2(rawCodec{}))
	c.openedAt = now()
	if err != nil {
		opened <- struct{}{}
		c.fail(fmt.Sprintf("client %d: open: %v", c.idx, err))
		return
	}
	c.stream = stream
	if c.d.cfg.Kind == "sidecar" {
		err = c.subscribe(cds, nil)
		if err == nil {
			err = c.subscribe(lds, nil)
		}
		if err == nil && !c.d.cfg.Delta && capturesDNS(c.spec.Metadata) {
			// the agent's subscription, on the proxy's stream (meshd serves it the same bytes either way)
			err = c.send(sotwRequest("", nil, nil, typeNameTable, ""))
		}
	} else {
		err = c.subscribe(lds, []string{c.spec.Target})
	}
	opened <- struct{}{}
	if err != nil {
		c.fail(fmt.Sprintf("client %d: send: %v", c.idx, err))
		return
	}
	for {
		msg := decoded{c: c}
		if err := stream.RecvMsg(&msg); err != nil {
			if s, ok := status.FromError(err); ok && (s.Code() == codes.Canceled && c.closing.Load()) {
				return
			}
			c.fail(fmt.Sprintf("client %d: stream ended: %v", c.idx, err))
			return
		}
		if err := c.onResponse(&msg); err != nil {
			c.fail(fmt.Sprintf("client %d: %v", c.idx, err))
			return
		}
	}
}

// capturesDNS reports whether node metadata says DNS_CAPTURE=true (as meshd reads it).
func capturesDNS(md map[string]any) bool {
	v, ok := md["DNS_CAPTURE"].(string)
	return ok && strings.EqualFold(v, "true")
}

func (c *client) send(msg request) error {
	return c.stream.SendMsg(&msg)
}

func sameList(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// subscribe starts or changes the subscription of one type (nothing when the names are the same).
// blk is the encoded names block when the caller has one cached.
func (c *client) subscribe(k kind, names []string) error {
	return c.subscribeWith(k, names, nil)
}

func (c *client) subscribeWith(k kind, names []string, blk []byte) error {
	w := c.watches[k]
	if w != nil && names != nil && sameList(w.names, names) {
		return nil
	}
	if w == nil && names != nil && len(names) == 0 {
		return nil
	}
	var prev []string
	if w == nil {
		w = &watch{}
		c.watches[k] = w
	} else {
		prev = w.names
	}
	w.names = names
	if c.d.cfg.Delta {
		sub, unsub := diffSorted(prev, names)
		if w.started && len(sub) == 0 && len(unsub) == 0 {
			return nil
		}
		w.started = true
		for _, n := range unsub {
			if w.extra == nil {
				w.extra = map[string]*resInfo{}
			}
			w.extra[n] = nil
		}
		return c.send(deltaRequest(c.takeNode(), kindURLs[k], sub, unsub, ""))
	}
	if blk == nil {
		blk = namesBlock(3, names)
	}
	w.namesBlock = blk
	w.started = true
	return c.send(sotwRequest(w.version, c.takeNode(), w.namesBlock, kindURLs[k], w.nonce))
}

func (c *client) takeNode() []byte {
	n := c.node
	c.node = nil
	return n
}

// diffSorted returns what b adds to a and what it drops (both sorted lists; nil a = nothing).
func diffSorted(a, b []string) (add, drop []string) {
	if !sort.StringsAreSorted(b) {
		b = append([]string(nil), b...)
		sort.Strings(b)
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i == len(a):
			add = append(add, b[j])
			j++
		case j == len(b):
			drop = append(drop, a[i])
			i++
		case a[i] == b[j]:
			i++
			j++
		case a[i] < b[j]:
			drop = append(drop, a[i])
			i++
		default:
			add = append(add, b[j])
			j++
		}
	}
	return add, drop
}

// partialKinds: SotW responses of these types may carry only some of the subscribed resources.
var partialKinds = [numKinds]bool{eds: true, rds: true}

func (c *client) onResponse(m *decoded) error {
	if m.err != nil {
		return m.err
	}
	d := c.d
	delta := d.cfg.Delta
	if m.nameTable {
		// as the agent of a sidecar that captures DNS: take the table and ACK it
		d.ndsResponses.Add(1)
		d.ndsBytes.Add(int64(m.size))
		return c.send(sotwRequest(m.version, nil, nil, typeNameTable, m.nonce))
	}
	k, info := m.kind, m.info
	d.responses[k].Add(1)
	d.bytes[k].Add(int64(m.size))
	d.lastResponseAt.Store(m.at)
	win := d.window.Load()
	if win != nil {
		win.record(c.idx, k, m.size, m.at)
	}
	w := c.watches[k]
	if w == nil {
		return fmt.Errorf("unsolicited %s response", kindNames[k])
	}
	var err error
	w.version = m.version
	w.nonce = m.nonce
	switch {
	case delta && w.base != nil:
		if w.extra == nil {
			w.extra = map[string]*resInfo{}
		}
		for n, ri := range info.names {
			w.extra[n] = ri
		}
		for _, n := range m.removed {
			w.extra[n] = nil
		}
	case delta:
		w.base = info
		for _, n := range m.removed {
			if w.extra == nil {
				w.extra = map[string]*resInfo{}
			}
			w.extra[n] = nil
		}
	case partialKinds[k] && w.base != nil && w.names != nil && !covers(info, w.names):
		// the client keeps what it had and adds these (as Envoy does)
		if w.extra == nil {
			w.extra = map[string]*resInfo{}
		}
		for n, ri := range info.names {
			w.extra[n] = ri
		}
	default:
		w.base = info
		w.extra = nil
	}
	// subscriptions the response implies go out before its ACK, as Envoy does (the view of
	// what the client holds is needed only for the types that name others)
	if d.cfg.Kind == "sidecar" {
		switch k {
		case cds:
			view := w.view()
			err = c.subscribeWith(eds, view.edsClusters, c.cachedBlock(view, "eds", view.edsClusters))
		case lds:
			view := w.view()
			err = c.subscribeWith(rds, view.routeNames, c.cachedBlock(view, "rds", view.routeNames))
		}
	} else {
		switch k {
		case lds:
			view := w.view()
			err = c.subscribeWith(rds, view.routeNames, c.cachedBlock(view, "rds", view.routeNames))
		case rds:
			view := w.view()
			err = c.subscribeWith(cds, view.routeClusters, c.cachedBlock(view, "cds", view.routeClusters))
		case cds:
			view := w.view()
			err = c.subscribeWith(eds, view.edsClusters, c.cachedBlock(view, "eds", view.edsClusters))
		}
	}
	if err != nil {
		return err
	}
	// ACK
	if delta {
		err = c.send(deltaRequest(nil, kindURLs[k], nil, nil, m.nonce))
	} else {
		err = c.send(sotwRequest(w.version, nil, w.namesBlock, kindURLs[k], w.nonce))
	}
	if err != nil {
		return err
	}
	ackedAt := now()
	if win != nil {
		win.checkProbe(c.idx, k, info, ackedAt)
	}
	if c.completedAt.Load() == 0 && c.complete() {
		c.completedAt.Store(ackedAt)
		d.completeCount.Add(1)
	}
	return nil
}

// cachedBlock: encoded names block of a shared list summary (nil for per-client merged views).
func (c *client) cachedBlock(view *listInfo, which string, names []string) []byte {
	if c.d.cfg.Delta {
		return nil
	}
	for _, w := range c.watches {
		if w != nil && w.base == view {
			return view.block(which, names)
		}
	}
	return nil
}

func covers(info *listInfo, names []string) bool {
	for _, n := range names {
		if info.names[n] == nil {
			return false
		}
	}
	return true
}

// covers is covers(li, names) for a names list the clients share (a list of another shared
// summary): looked up once per list, not once per client.
func (li *listInfo) covers(names []string) bool {
	key := listKey{first: &names[0], n: len(names)}
	li.mu.Lock()
	v, ok := li.covered[key]
	li.mu.Unlock()
	if ok {
		return v
	}
	v = covers(li, names)
	li.mu.Lock()
	if li.covered == nil || len(li.covered) >= 64 {
		// lists of per-client views (delta) come and go: keep a few
		li.covered = map[listKey]bool{}
	}
	li.covered[key] = v
	li.mu.Unlock()
	return v
}

func (c *client) complete() bool {
	cw, lw := c.watches[cds], c.watches[lds]
	if cw == nil || lw == nil || cw.base == nil || lw.base == nil {
		return false
	}
	cv, lv := cw.view(), lw.view()
	if c.d.cfg.Kind == "sidecar" {
		return c.watches[eds].holds(cv.edsClusters) && c.watches[rds].holds(lv.routeNames)
	}
	if lv.names[c.spec.Target] == nil {
		return false
	}
	rw := c.watches[rds]
	if rw == nil || rw.base == nil || !rw.holds(lv.routeNames) {
		return false
	}
	rv := rw.view()
	for _, n := range rv.routeClusters {
		if !cw.has(n) {
			return false
		}
	}
	return c.watches[eds].holds(cv.edsClusters)
}
