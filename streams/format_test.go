package streams

import (
	"bytes"
	"errors"
	"testing"

	"github.com/skeinflow/skein/world"
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
	for _, bad := range [][]byte{nil, []byte("SKS2"), []byte("XXXX\x01\x01a"), []byte("SKS1\x01\x01a"), []byte("SKS2\x01\x05ab")} {
		if _, err := decodeObject(bad); !errors.Is(err, world.ErrCorrupt) {
			t.Fatalf("decodeObject(%q): %v, want world.ErrCorrupt", bad, err)
		}
	}
}

// TestObjectBitFlips: every single-bit flip of a stored object is refused
// with world.ErrCorrupt; none decodes to other chunks.
func TestObjectBitFlips(t *testing.T) {
	obj := encodeObject([][]byte{[]byte(`{"progress":1}`), {}, []byte("chunk two"), []byte("\x00\xff")})
	silent := 0
	for i := range len(obj) * 8 {
		b := bytes.Clone(obj)
		b[i/8] ^= 1 << (i % 8)
		if _, err := decodeObject(b); !errors.Is(err, world.ErrCorrupt) {
			silent++
			t.Errorf("flip of bit %d: %v, want world.ErrCorrupt", i, err)
		}
	}
	t.Logf("%d single-bit flips of a %d-byte object: %d decoded", len(obj)*8, len(obj), silent)
}
