package streams_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// limitedStreamers returns n Streamers ("processes") on one memS3, each
// bounding a stream to max bytes, with objects of at most 4 chunks.
func limitedStreamers(t *testing.T, f *memS3, n int, max int64) []*streams.Streamer {
	t.Helper()
	out := make([]*streams.Streamer, n)
	for i := range out {
		s, err := streams.New(streams.Config{S3: f, Bucket: "b", MaxStreamBytes: max}, knobs.WithMaxChunksPerObject(4))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out
}

func writeBytes(s *streams.Streamer, run, name string, sizes ...int) error {
	var cs [][]byte
	for _, n := range sizes {
		cs = append(cs, bytes.Repeat([]byte{'b'}, n))
	}
	return s.WriteStream(context.Background(), &world.WriteStreamParams{RunID: run, Name: name, Chunks: cs})
}

func wantStreamLimit(t *testing.T, err error, max, size int64, what string) {
	t.Helper()
	var le *world.LimitError
	if !errors.Is(err, world.ErrLimitExceeded) || !errors.As(err, &le) || le.Limit != "stream bytes" || le.Max != max || le.Size != size {
		t.Fatalf("%s: %v, want a *world.LimitError of stream bytes, Max %d, Size %d", what, err, max, size)
	}
}

// TestStreamBytesBoundAcrossStreamers: the bytes a stream holds travel
// with its objects, so two processes writing one stream in turn hold it to
// MaxStreamBytes together (a count kept per process let each write up to
// the bound); a refused write puts nothing, and its bytes do not count.
func TestStreamBytesBoundAcrossStreamers(t *testing.T) {
	f := newMemS3()
	ss := limitedStreamers(t, f, 2, 100)
	run := ids.New(world.PrefixRun)
	for i, n := range []int{30, 30, 30} {
		if err := writeBytes(ss[i%2], run, "out", n); err != nil {
			t.Fatalf("write %d of %d bytes: %v", i, n, err)
		}
	}
	objects := f.stored()
	wantStreamLimit(t, writeBytes(ss[1], run, "out", 5, 6), 100, 101, "a write to 101 bytes, through the other process (its count stale)")
	wantStreamLimit(t, writeBytes(ss[0], run, "out", 11), 100, 101, "a write to 101 bytes")
	if got := f.stored(); got != objects {
		t.Fatalf("refused writes stored %d objects", got-objects)
	}
	if err := writeBytes(ss[1], run, "out", 10); err != nil {
		t.Fatalf("a write to exactly 100 bytes: %v", err)
	}
	wantStreamLimit(t, writeBytes(ss[0], run, "out", 1), 100, 101, "a write past a full stream")
	if err := writeBytes(ss[0], run, "other", 100); err != nil {
		t.Fatalf("another stream of the run has its own bound: %v", err)
	}
	// A fresh process learns the count from the last object.
	fresh := limitedStreamers(t, f, 1, 100)[0]
	wantStreamLimit(t, writeBytes(fresh, run, "out", 1), 100, 101, "a write past a full stream, from a fresh process")
}

// TestStreamBytesLargeWriteRefusedWhole: a write of more chunks than an
// object holds is judged whole before its first object: refused, it puts
// nothing.
func TestStreamBytesLargeWriteRefusedWhole(t *testing.T) {
	f := newMemS3()
	s := limitedStreamers(t, f, 1, 100)[0]
	run := ids.New(world.PrefixRun)
	sizes := []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 11} // 101 bytes in 3 objects
	wantStreamLimit(t, writeBytes(s, run, "out", sizes...), 100, 101, "a write of 101 bytes over 3 objects")
	if got := f.stored(); got != 0 {
		t.Fatalf("the refused write stored %d objects", got)
	}
	if err := writeBytes(s, run, "out", sizes[:9]...); err != nil {
		t.Fatalf("90 bytes over 3 objects: %v", err)
	}
	if p, err := s.ReadStream(context.Background(), &world.ReadStreamParams{RunID: run, Name: "out"}); err != nil || len(p.Chunks) != 9 {
		t.Fatalf("read: %+v, %v; want 9 chunks", p, err)
	}
}

// TestStreamBytesMetadata: an object of a version that did not record the
// stream's bytes counts as none (the stream counts from its next object);
// a count that does not parse is world.ErrCorrupt, for writers and readers.
func TestStreamBytesMetadata(t *testing.T) {
	f := newMemS3()
	s := limitedStreamers(t, f, 1, 100)[0]
	run := ids.New(world.PrefixRun)
	if err := writeBytes(s, run, "old", 90); err != nil {
		t.Fatal(err)
	}
	if err := writeBytes(s, run, "bad", 10); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	for k, o := range f.objects {
		switch {
		case bytes.Contains([]byte(k), []byte("/old/")):
			delete(o.Metadata, "bytes")
		case bytes.Contains([]byte(k), []byte("/bad/")):
			o.Metadata["bytes"] = "ten"
		}
	}
	f.mu.Unlock()
	fresh := limitedStreamers(t, f, 1, 100)[0]
	if err := writeBytes(fresh, run, "old", 100); err != nil {
		t.Fatalf("100 bytes after an object without a count: %v", err)
	}
	wantStreamLimit(t, writeBytes(fresh, run, "old", 1), 100, 101, "past the bound counted from the first counted object")
	if err := writeBytes(fresh, run, "bad", 1); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("a write after an object whose count does not parse: %v, want world.ErrCorrupt", err)
	}
	if _, err := fresh.StreamInfo(context.Background(), &world.StreamInfoParams{RunID: run, Name: "bad"}); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("StreamInfo of a stream whose last object's count does not parse: %v, want world.ErrCorrupt", err)
	}
}

// stored counts the objects f holds.
func (f *memS3) stored() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.objects)
}

// TestStreamBytesFraming: the bound counts each chunk without its writer's
// framing (WriteStreamParams.Framing, the SDK's tag byte), through
// coalesced writes, writes spanning objects and other processes: five
// chunks of 1000 bytes and a tag each fill a bound of 5000 exactly, one
// byte more is refused as 5001, and a framing out of range is
// world.ErrInvalid.
func TestStreamBytesFraming(t *testing.T) {
	f := newMemS3()
	ss := limitedStreamers(t, f, 2, 5000)
	run := ids.New(world.PrefixRun)
	framed := func(s *streams.Streamer, framing int, sizes ...int) error {
		var cs [][]byte
		for _, n := range sizes {
			cs = append(cs, make([]byte, n))
		}
		return s.WriteStream(context.Background(), &world.WriteStreamParams{RunID: run, Name: "user.b3V0", Chunks: cs, Framing: framing})
	}
	if err := framed(ss[0], 1, 1001); err != nil {
		t.Fatalf("1000 bytes and a tag: %v", err)
	}
	if err := framed(ss[1], 1, 1001, 1001, 1001, 1001, 1001, 1001); err == nil {
		t.Fatal("6000 bytes over two objects were accepted")
	}
	if err := framed(ss[1], 1, 1001, 1001, 1001, 1001); err != nil {
		t.Fatalf("4000 bytes more, through the other process: %v", err)
	}
	wantStreamLimit(t, framed(ss[0], 1, 2), 5000, 5001, "one byte and a tag past 5000 bytes")
	fresh := limitedStreamers(t, f, 1, 5000)[0]
	wantStreamLimit(t, framed(fresh, 1, 2), 5000, 5001, "one byte and a tag past 5000 bytes, from a fresh process")
	if p, err := fresh.ReadStream(context.Background(), &world.ReadStreamParams{RunID: run, Name: "user.b3V0"}); err != nil || len(p.Chunks) != 5 {
		t.Fatalf("read: %+v, %v; want 5 chunks", p, err)
	}
	for _, bad := range []struct{ framing, size int }{{-1, 5}, {9, 20}, {2, 1}} {
		if err := framed(fresh, bad.framing, bad.size); !errors.Is(err, world.ErrInvalid) {
			t.Errorf("framing %d of a %d-byte chunk: %v, want world.ErrInvalid", bad.framing, bad.size, err)
		}
	}
}
