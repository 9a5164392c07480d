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
	"hash/maphash"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// response is a parsed response envelope. Its resources are not collected: the memo hashes their
// span and walks it (eachResource) only when no client has received the same bytes before.
type response struct {
	version string
	typeURL string
	nonce   string
	count   int      // resources
	removed []string // delta only
	span    []byte   // the bytes from the first to the last resource field
}

func parseResponse(b []byte, delta bool) (*response, error) {
	r := &response{}
	start, end := -1, -1
	pos := 0
	for pos < len(b) {
		fieldStart := pos
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		pos += n
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b[pos:])
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			pos += m
			continue
		}
		p, m := protowire.ConsumeBytes(b[pos:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		pos += m
		switch num {
		case 1:
			r.version = string(p)
		case 2:
			r.count++
			if start < 0 {
				start = fieldStart
			}
			end = pos
		case 4:
			r.typeURL = string(p)
		case 5:
			r.nonce = string(p)
		case 6:
			if delta {
				r.removed = append(r.removed, string(p))
			}
		}
	}
	if start >= 0 {
		r.span = b[start:end]
	}
	return r, nil
}

// eachResource calls fn with each resource of the span (Any bytes in SotW, Resource bytes in delta);
// other fields between the first and the last resource are skipped.
func (r *response) eachResource(fn func([]byte) error) error {
	return fields(r.span, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
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

// memo shares decoded content between clients: one decode per distinct resource span. Keys are
// a 64-bit hash of the span with its type and length (the chance of two different spans of the
// same type and length colliding is ~2^-64 per pair, far below anything a benchmark run sees).
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
// distinct content.
func (m *memo) info(k kind, r *response, delta bool) (*listInfo, error) {
	key := memoKey{kind: k, length: len(r.span), count: r.count, hash: maphash.Bytes(m.seed, r.span)}
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
		e.err = r.eachResource(func(raw []byte) error {
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
