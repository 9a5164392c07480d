package main

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func anyCluster(name string, eds bool) []byte {
	var c []byte
	c = appendString(c, 1, name)
	if eds {
		c = protowire.AppendTag(c, 2, protowire.VarintType)
		c = protowire.AppendVarint(c, 3)
	}
	var a []byte
	a = appendString(a, 1, typeCluster)
	return appendBytesField(a, 2, c)
}

func sotwResponse(version, nonce string, resources ...[]byte) []byte {
	var b []byte
	b = appendString(b, 1, version)
	for _, r := range resources {
		b = appendBytesField(b, 2, r)
	}
	b = appendString(b, 4, typeCluster)
	return appendString(b, 5, nonce)
}

// split cuts b into pieces of n bytes (the last shorter), as the transport holds a long message.
func split(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > n {
		out = append(out, b[:n])
		b = b[n:]
	}
	return append(out, b)
}

func TestResponsesOfTheSameBytesAreDecodedOnce(t *testing.T) {
	m := newMemo()
	body := sotwResponse("v1", "n1", anyCluster("a", true), anyCluster("b", false), anyCluster("c", true))
	bufs := [][]byte{body}
	r, err := parseResponse(bufs, false, m.seed)
	if err != nil {
		t.Fatal(err)
	}
	if r.version != "v1" || r.nonce != "n1" || r.typeURL != typeCluster || r.count != 3 {
		t.Fatalf("envelope: %+v", r)
	}
	li, err := m.info(cds, r, bufs, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(li.names) != 3 || len(li.edsClusters) != 2 || li.edsClusters[0] != "a" || li.edsClusters[1] != "c" {
		t.Fatalf("decoded: names %v eds %v", li.names, li.edsClusters)
	}
	// the same resources under another nonce, held in pieces of every size: shared, not decoded again
	other := sotwResponse("v1", "n2", anyCluster("a", true), anyCluster("b", false), anyCluster("c", true))
	for n := 1; n <= len(other); n++ {
		pieces := split(other, n)
		r2, err := parseResponse(pieces, false, m.seed)
		if err != nil {
			t.Fatalf("pieces of %d: %v", n, err)
		}
		if r2.nonce != "n2" || r2.version != "v1" || r2.count != 3 {
			t.Fatalf("pieces of %d: envelope %+v", n, r2)
		}
		li2, _ := m.info(cds, r2, pieces, false)
		if li2 != li || m.decodes != 1 {
			t.Fatalf("pieces of %d: same summary %v, decodes %d", n, li2 == li, m.decodes)
		}
	}
	// other resources, in pieces: decoded from them
	third := sotwResponse("v2", "n3", anyCluster("a", true), anyCluster("d", true))
	r3, _ := parseResponse(split(third, 3), false, m.seed)
	li3, err := m.info(cds, r3, split(third, 3), false)
	if err != nil || li3 == li || len(li3.names) != 2 || li3.names["d"] == nil || m.decodes != 2 {
		t.Fatalf("third response: names %v decodes %d err %v", li3.names, m.decodes, err)
	}
	// a response cut short is refused
	if _, err := parseResponse(split(body[:len(body)-3], 4), false, m.seed); err == nil {
		t.Fatal("a truncated response was read")
	}
}

func TestARequestInPiecesIsTheWholeRequest(t *testing.T) {
	names := namesBlock(3, []string{"x", "y"})
	got := sotwRequest("v1", nil, names, typeCluster, "n1").bytes()
	var want []byte
	want = appendString(want, 1, "v1")
	want = append(want, names...)
	want = appendString(want, 4, typeCluster)
	want = appendString(want, 5, "n1")
	if !bytes.Equal(got, want) {
		t.Fatalf("request bytes\n got %x\nwant %x", got, want)
	}
	// the names block is sent as it is, not copied
	req := sotwRequest("v1", nil, names, typeCluster, "n1")
	if len(req) != 3 || &req[1][0] != &names[0] {
		t.Fatalf("names block copied: %d pieces", len(req))
	}
	codec := rawCodec{}
	bs, err := codec.Marshal(&req)
	if err != nil || !bytes.Equal(bs.Materialize(), want) {
		t.Fatalf("marshalled %x, %v", bs.Materialize(), err)
	}
}

func TestHoldsAnswersPerList(t *testing.T) {
	m := newMemo()
	bufs := [][]byte{sotwResponse("v1", "n1", anyCluster("a", true), anyCluster("b", true))}
	r, _ := parseResponse(bufs, false, m.seed)
	li, _ := m.info(cds, r, bufs, false)
	w := &watch{base: li}
	have := []string{"a", "b"}
	missing := []string{"a", "z"}
	for i := 0; i < 2; i++ {
		if !w.holds(have) || w.holds(missing) {
			t.Fatalf("round %d: holds(have) %v holds(missing) %v", i, w.holds(have), w.holds(missing))
		}
	}
	// a removal received since the base counts
	w.extra = map[string]*resInfo{"b": nil}
	if w.holds(have) {
		t.Fatal("holds a removed resource")
	}
}
