package streams

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

func encodeObject(at place, chunks [][]byte) []byte { return seal(encodeBody(chunks), at) }

var here = place{runID: "wrun_A", name: "user.cHJvZ3Jlc3M", first: 4}

func TestObjectRoundTrip(t *testing.T) {
	for _, chunks := range [][][]byte{
		{[]byte("a")},
		{[]byte("a"), {}, []byte("\x00\xff binary"), bytes.Repeat([]byte("z"), 70000)},
	} {
		got, err := decodeObject(here, encodeObject(here, chunks))
		if err != nil || len(got) != len(chunks) {
			t.Fatalf("round trip of %d chunks: %d, %v", len(chunks), len(got), err)
		}
		for i := range chunks {
			if !bytes.Equal(got[i], chunks[i]) {
				t.Fatalf("chunk %d differs", i)
			}
		}
	}
	for _, bad := range [][]byte{nil, []byte("SKS3"), []byte("XXXX\x01\x01a"), []byte("SKS1\x01\x01a"), []byte("SKS3\x01\x05ab")} {
		if _, err := decodeObject(here, bad); !errors.Is(err, world.ErrCorrupt) {
			t.Fatalf("decodeObject(%q): %v, want world.ErrCorrupt", bad, err)
		}
	}
}

// TestObjectBoundToPlace: an object's checksum covers its run, its stream
// and its first index, so an object read anywhere but where it was written
// (copied or moved to another run, stream or index) is world.ErrCorrupt;
// so is an object of the format whose checksum covered its body alone
// (SKS2), which could not tell.
func TestObjectBoundToPlace(t *testing.T) {
	obj := encodeObject(here, [][]byte{[]byte("run A's progress")})
	for _, at := range []place{
		{runID: "wrun_B", name: here.name, first: here.first},
		{runID: here.runID, name: "user.b3V0", first: here.first},
		{runID: here.runID, name: here.name, first: 5},
		{runID: here.runID, name: here.name, first: 0},
		{runID: "wrun_", name: "Auser.cHJvZ3Jlc3M", first: 4}, // the same bytes, cut elsewhere
	} {
		if _, err := decodeObject(at, obj); !errors.Is(err, world.ErrCorrupt) {
			t.Errorf("an object of %+v read at %+v: %v, want world.ErrCorrupt", here, at, err)
		}
	}
	sks2 := append([]byte("SKS2"), obj[len(magic):]...)
	if _, err := decodeObject(here, sks2); !errors.Is(err, world.ErrCorrupt) {
		t.Errorf("an SKS2 object: %v, want world.ErrCorrupt", err)
	}
}

// TestObjectBitFlips: every single-bit flip of a stored object is refused
// with world.ErrCorrupt; none decodes to other chunks.
func TestObjectBitFlips(t *testing.T) {
	obj := encodeObject(here, [][]byte{[]byte(`{"progress":1}`), {}, []byte("chunk two"), []byte("\x00\xff")})
	silent := 0
	for i := range len(obj) * 8 {
		b := bytes.Clone(obj)
		b[i/8] ^= 1 << (i % 8)
		if _, err := decodeObject(here, b); !errors.Is(err, world.ErrCorrupt) {
			silent++
			t.Errorf("flip of bit %d: %v, want world.ErrCorrupt", i, err)
		}
	}
	t.Logf("%d single-bit flips of a %d-byte object: %d decoded", len(obj)*8, len(obj), silent)
}

// TestMarkerBoundToPlace: the close marker verifies only at the place it
// was sealed for (the stream's tail) with the data bytes it was sealed
// with; every single-bit flip of it, an empty object (the marker of an
// earlier version) and a marker read as data are world.ErrCorrupt. No
// object of chunks has its size.
func TestMarkerBoundToPlace(t *testing.T) {
	m := sealMarker(here, 1234)
	if len(m) != markerSize || markerSize >= len(encodeObject(here, [][]byte{{}})) {
		t.Fatalf("marker of %d bytes (markerSize %d); the smallest object of chunks is %d", len(m), markerSize, len(encodeObject(here, [][]byte{{}})))
	}
	if err := checkMarker(here, m, 1234); err != nil {
		t.Fatalf("the marker at its place: %v", err)
	}
	type read struct {
		at    place
		b     []byte
		bytes int64
	}
	bad := []read{
		{place{runID: "wrun_B", name: here.name, first: here.first}, m, 1234},
		{place{runID: here.runID, name: "user.b3V0", first: here.first}, m, 1234},
		{place{runID: here.runID, name: here.name, first: 5}, m, 1234},
		{here, m, 1233},
		{here, nil, 1234},
		{here, append(bytes.Clone(m), 0), 1234},
	}
	for i := range markerSize * 8 {
		b := bytes.Clone(m)
		b[i/8] ^= 1 << (i % 8)
		bad = append(bad, read{here, b, 1234})
	}
	for _, tc := range bad {
		if err := checkMarker(tc.at, tc.b, tc.bytes); !errors.Is(err, world.ErrCorrupt) {
			t.Errorf("marker %x read at %+v with %d bytes: %v, want world.ErrCorrupt", tc.b, tc.at, tc.bytes, err)
		}
	}
	if _, err := decodeObject(here, m); !errors.Is(err, world.ErrCorrupt) {
		t.Errorf("the marker decoded as an object of chunks: %v, want world.ErrCorrupt", err)
	}
	for _, err := range []error{checkMarker(here, nil, 0), func() error { _, err := decodeObject(here, nil); return err }()} {
		if err == nil || !strings.Contains(err.Error(), "earlier version") {
			t.Errorf("an empty object: %v, want a refusal naming the earlier version's marker", err)
		}
	}
}
