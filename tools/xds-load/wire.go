package main

// Envelopes of the discovery protocol, read and written by hand around the resources:
//
//	DiscoveryRequest       { version_info = 1; node = 2; resource_names = 3; type_url = 4; response_nonce = 5 }
//	DiscoveryResponse      { version_info = 1; resources = 2; type_url = 4; nonce = 5 }
//	DeltaDiscoveryRequest  { node = 1; type_url = 2; resource_names_subscribe = 3;
//	                         resource_names_unsubscribe = 4; response_nonce = 6 }
//	DeltaDiscoveryResponse { system_version_info = 1; resources = 2; type_url = 4; nonce = 5;
//	                         removed_resources = 6 }
//	Resource               { version = 1; resource = 2; name = 3 }

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// response is a parsed response envelope. Its resources are not collected: they are hashed as the
// envelope is read, and joined and walked (resourceBytes, eachResource) only when no client has
// received the same resources before.
type response struct {
	version string
	typeURL string
	nonce   string
	count   int      // resources
	length  int      // bytes of the resource fields, tags included
	hash    uint64   // of the resources (maphash with the memo's seed, see parseResponse)
	removed []string // delta only
}

// pieces reads a message held in several buffers (as the transport holds a long one) without
// joining them.
type pieces struct {
	p   [][]byte
	i   int
	off int
}

func (c *pieces) more() bool {
	for c.i < len(c.p) && c.off == len(c.p[c.i]) {
		c.i++
		c.off = 0
	}
	return c.i < len(c.p)
}

func (c *pieces) varint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		if !c.more() {
			return 0, errTruncated
		}
		b := c.p[c.i][c.off]
		c.off++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("varint overflow")
}

// take passes the next n bytes to fn, a run of one buffer at a time.
func (c *pieces) take(n uint64, fn func([]byte)) error {
	for n > 0 {
		if !c.more() {
			return errTruncated
		}
		run := c.p[c.i][c.off:]
		if uint64(len(run)) > n {
			run = run[:n]
		}
		if fn != nil {
			fn(run)
		}
		c.off += len(run)
		n -= uint64(len(run))
	}
	return nil
}

func (c *pieces) str(n uint64) (string, error) {
	if c.more() && uint64(len(c.p[c.i])-c.off) >= n {
		s := string(c.p[c.i][c.off : c.off+int(n)])
		c.off += int(n)
		return s, nil
	}
	var b []byte
	err := c.take(n, func(run []byte) { b = append(b, run...) })
	return string(b), err
}

// resourceSink receives a response's resources in order: start with a resource's length, then
// its bytes as runs of the transport's buffers (views, never copies), then end.
type resourceSink struct {
	start func(n int)
	run   func([]byte)
	end   func()
}

// readResponse reads the envelope of a response held in one or more buffers; each resource's
// payload goes to sink, in order.
func readResponse(bufs [][]byte, delta bool, sink resourceSink) (*response, error) {
	r := &response{}
	c := &pieces{p: bufs}
	for c.more() {
		tag, err := c.varint()
		if err != nil {
			return nil, err
		}
		num, typ := protowire.DecodeTag(tag)
		if num <= 0 {
			return nil, errors.New("invalid field number")
		}
		switch typ {
		case protowire.VarintType:
			if _, err := c.varint(); err != nil {
				return nil, err
			}
			continue
		case protowire.Fixed64Type:
			if err := c.take(8, nil); err != nil {
				return nil, err
			}
			continue
		case protowire.Fixed32Type:
			if err := c.take(4, nil); err != nil {
				return nil, err
			}
			continue
		case protowire.BytesType:
		default:
			return nil, fmt.Errorf("unsupported wire type %d", typ)
		}
		n, err := c.varint()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1:
			r.version, err = c.str(n)
		case 2:
			if n > uint64(math.MaxInt) {
				return nil, errTruncated
			}
			r.count++
			r.length += protowire.SizeTag(2) + protowire.SizeBytes(int(n))
			sink.start(int(n))
			if err = c.take(n, sink.run); err == nil {
				sink.end()
			}
		case 4:
			r.typeURL, err = c.str(n)
		case 5:
			r.nonce, err = c.str(n)
		case 6:
			var name string
			name, err = c.str(n)
			if delta {
				r.removed = append(r.removed, name)
			}
		default:
			err = c.take(n, nil)
		}
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// parseResponse reads a response's envelope and hashes its resources with seed: each resource on
// its own, folded in order. A resource one buffer holds is hashed in one call over a view (the
// fastest for many small resources); one the transport split is streamed through maphash.Hash,
// which gives the same sum, rather than copied (a 2.4 MB route table per client otherwise).
func parseResponse(bufs [][]byte, delta bool, seed maphash.Seed) (*response, error) {
	var acc uint64
	var h maphash.Hash
	h.SetSeed(seed)
	want, seen := 0, 0
	fold := func(sum uint64) { acc = (bits.RotateLeft64(acc, 17) ^ sum) * 0x9e3779b97f4a7c15 }
	r, err := readResponse(bufs, delta, resourceSink{
		start: func(n int) { want, seen = n, 0 },
		run: func(p []byte) {
			if seen == 0 && len(p) == want {
				seen = want
				fold(maphash.Bytes(seed, p))
				return
			}
			if seen == 0 {
				h.Reset()
			}
			seen += len(p)
			_, _ = h.Write(p)
			if seen == want {
				fold(h.Sum64())
			}
		},
		end: func() {
			if want == 0 {
				fold(maphash.Bytes(seed, nil))
			}
		},
	})
	if err != nil {
		return nil, err
	}
	r.hash = acc
	return r, nil
}

// resourceBytes joins the resource fields of a response (a repeated field 2, as eachResource reads it).
func resourceBytes(bufs [][]byte, length int) []byte {
	out := make([]byte, 0, length)
	_, _ = readResponse(bufs, false, resourceSink{
		start: func(n int) {
			out = protowire.AppendTag(out, 2, protowire.BytesType)
			out = protowire.AppendVarint(out, uint64(n))
		},
		run: func(p []byte) { out = append(out, p...) },
		end: func() {},
	})
	return out
}

// eachResource calls fn with each resource of joined resource fields (Any bytes in SotW, Resource
// bytes in delta).
func eachResource(span []byte, fn func([]byte) error) error {
	return fields(span, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
		if num == 2 && typ == protowire.BytesType {
			return fn(p)
		}
		return nil
	})
}

// deltaResource returns the name and the Any of a delta Resource (nil Any: the server sent a
// name only).
func deltaResource(b []byte) (string, []byte, error) {
	var name string
	var anyBytes []byte
	err := fields(b, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 2:
			anyBytes = p
		case 3:
			name = string(p)
		}
		return nil
	})
	return name, anyBytes, err
}

// namesBlock encodes names as repeated string field `num`.
func namesBlock(num protowire.Number, names []string) []byte {
	size := 0
	for _, n := range names {
		size += protowire.SizeTag(num) + protowire.SizeBytes(len(n))
	}
	out := make([]byte, 0, size)
	for _, n := range names {
		out = protowire.AppendTag(out, num, protowire.BytesType)
		out = protowire.AppendString(out, n)
	}
	return out
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytesField(b []byte, num protowire.Number, p []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

// request is an encoded request in pieces sent one after the other: a SotW ACK repeats a names
// block of up to a megabyte, shared by every client subscribed to the same names, which is handed
// to the transport as it is instead of being copied into a buffer per request.
type request [][]byte

// sotwRequest assembles a DiscoveryRequest; node is the encoded Node message or nil.
func sotwRequest(version string, node []byte, names []byte, typeURL, nonce string) request {
	head := make([]byte, 0, len(version)+len(node)+16)
	head = appendString(head, 1, version)
	if node != nil {
		head = appendBytesField(head, 2, node)
	}
	tail := make([]byte, 0, len(typeURL)+len(nonce)+8)
	tail = appendString(tail, 4, typeURL)
	tail = appendString(tail, 5, nonce)
	if len(names) == 0 {
		return request{append(head, tail...)}
	}
	return request{head, names, tail}
}

// bytes joins the pieces (tests).
func (r request) bytes() []byte {
	var out []byte
	for _, p := range r {
		out = append(out, p...)
	}
	return out
}

// deltaRequest assembles a DeltaDiscoveryRequest.
func deltaRequest(node []byte, typeURL string, subscribe, unsubscribe []string, nonce string) request {
	out := make([]byte, 0, 64)
	if node != nil {
		out = appendBytesField(out, 1, node)
	}
	out = appendString(out, 2, typeURL)
	out = append(out, namesBlock(3, subscribe)...)
	out = append(out, namesBlock(4, unsubscribe)...)
	out = appendString(out, 6, nonce)
	return request{out}
}

// memo shares decoded content between clients: one decode per distinct list of resources. Keys
// are a 64-bit hash of the resources with their type, count and length (the chance of two
// different lists of the same type, count and length colliding is ~2^-64 per pair, far below
// anything a benchmark run sees).
type memo struct {
	mu      sync.Mutex
	seed    maphash.Seed
	entries map[memoKey]*memoEntry
	decodes int64
	hits    int64
}

type memoKey struct {
	kind   kind
	length int
	count  int
	hash   uint64
}

type memoEntry struct {
	once sync.Once
	info *listInfo
	err  error
}

const memoLimit = 8192

func newMemo() *memo {
	return &memo{seed: maphash.MakeSeed(), entries: map[memoKey]*memoEntry{}}
}

// info decodes a SotW response's resources (Anys), or a delta response's (Resources), once per
// distinct content; bufs hold the response (read again only to decode content not seen before).
func (m *memo) info(k kind, r *response, bufs [][]byte, delta bool) (*listInfo, error) {
	key := memoKey{kind: k, length: r.length, count: r.count, hash: r.hash}
	m.mu.Lock()
	e := m.entries[key]
	if e == nil {
		if len(m.entries) >= memoLimit {
			m.entries = map[memoKey]*memoEntry{}
		}
		e = &memoEntry{}
		m.entries[key] = e
		m.decodes++
	} else {
		m.hits++
	}
	m.mu.Unlock()
	e.once.Do(func() {
		res := make([]*resInfo, 0, r.count)
		e.err = eachResource(resourceBytes(bufs, r.length), func(raw []byte) error {
			anyBytes := raw
			if delta {
				name, a, err := deltaResource(raw)
				if err != nil {
					return err
				}
				if a == nil {
					res = append(res, &resInfo{name: name})
					return nil
				}
				anyBytes = a
			}
			ri, err := decodeResource(k, anyBytes)
			if err != nil {
				return err
			}
			res = append(res, ri)
			return nil
		})
		if e.err != nil {
			return
		}
		e.info = summarize(res)
	})
	return e.info, e.err
}

// block returns the cached encoded resource_names block of one of the info's name lists.
func (li *listInfo) block(which string, names []string) []byte {
	li.mu.Lock()
	defer li.mu.Unlock()
	b, ok := li.blocks[which]
	if !ok {
		b = namesBlock(3, names)
		li.blocks[which] = b
	}
	return b
}
