package streams

import (
	"bytes"
	"testing"
)

func TestObjectRoundTrip(t *testing.T) {
	for _, chunks := range [][][]byte{
		{[]byte("a")},
		{[]byte("a"), {}, []byte("\x00\xff binary"), bytes.Repeat([]byte("z"), 70000)},
	} {
		got, err := decodeObject(encodeObject(chunks))
		if err != nil || len(got) != len(chunks) {
			t.Fatalf("round trip of %d chunks: %d, %v", len(chunks), len(got), err)
		}
		for i := range chunks {
			if !bytes.Equal(got[i], chunks[i]) {
				t.Fatalf("chunk %d differs", i)
			}
		}
	}
	for _, bad := range [][]byte{nil, []byte("SKS1"), []byte("XXXX\x01\x01a"), []byte("SKS1\x01\x05ab"), []byte("SKS1\x01\x01ab")} {
		if _, err := decodeObject(bad); err == nil {
			t.Fatalf("decodeObject(%q) accepted a malformed object", bad)
		}
	}
}
