package streams_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/world"
)

// closedStream writes chunks of the given sizes to a fresh stream of f,
// one WriteStream each (objects of at most 4 chunks), closes it if close,
// and returns its run ID.
func closedStream(t *testing.T, f *memS3, name string, close bool, writes ...[]int) string {
	t.Helper()
	s := limitedStreamers(t, f, 1, 0)[0]
	run := ids.New(world.PrefixRun)
	for _, w := range writes {
		if err := writeBytes(s, run, name, w...); err != nil {
			t.Fatal(err)
		}
	}
	if close {
		if err := s.CloseStream(context.Background(), &world.CloseStreamParams{RunID: run, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

func objectKey(run, name string, index int) string {
	return fmt.Sprintf("%s%s/%s/%016d", streams.DefaultPrefix, run, name, index)
}

// setObject stores body at key with metadata, as a tool writing to the
// bucket does (unconditionally).
func (f *memS3) setObject(key string, body []byte, meta map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = &s3.PutObjectInput{Key: aws.String(key), Metadata: meta}
	f.bodies[key] = body
}

func (f *memS3) object(key string) ([]byte, map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[key], maps.Clone(f.objects[key].Metadata)
}

// copyFrom stores at key what old has there, metadata and all.
func (f *memS3) copyFrom(old *memS3, key string) {
	body, meta := old.object(key)
	f.setObject(key, body, meta)
}

func (f *memS3) deleteObject(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, key)
	delete(f.bodies, key)
}

// wantCorruptRead reads the stream from start with a fresh Streamer (no
// tail cached) and wants world.ErrCorrupt naming key.
func wantCorruptRead(t *testing.T, f *memS3, run, name string, start int64, key, what string) {
	t.Helper()
	s := limitedStreamers(t, f, 1, 0)[0]
	p, err := s.ReadStream(context.Background(), &world.ReadStreamParams{RunID: run, Name: name, Start: start})
	if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), key) {
		t.Fatalf("%s: ReadStream from %d: %+v, %v; want world.ErrCorrupt naming %s", what, start, p, err, key)
	}
}

// TestEmptyObjectIsNotTheEnd: an object overwritten with 0 bytes in the
// middle of a closed or an open stream, or an empty object put at its
// tail, made readers stop there with done (a truncated stream returned as
// complete). It is world.ErrCorrupt naming the object, for reads from
// before it and at it, and for StreamInfo and writers; a stream closed by
// an earlier version (its marker an empty object) is refused with a
// message that says so.
func TestEmptyObjectIsNotTheEnd(t *testing.T) {
	ctx := context.Background()
	for _, closed := range []bool{true, false} {
		f := newMemS3()
		run := closedStream(t, f, "s", closed, []int{1, 2, 3, 4}, []int{5, 6, 7, 8}, []int{9, 10})
		mid := objectKey(run, "s", 4)
		f.setObject(mid, nil, nil) // e.g. `aws s3 cp /dev/null`
		what := fmt.Sprintf("closed %v, the object at 4 emptied", closed)
		for _, start := range []int64{0, 2, 4, 5} {
			wantCorruptRead(t, f, run, "s", start, mid, what)
		}
		s := limitedStreamers(t, f, 1, 0)[0]
		if info, err := s.StreamInfo(ctx, &world.StreamInfoParams{RunID: run, Name: "s"}); !errors.Is(err, world.ErrCorrupt) {
			t.Fatalf("%s: StreamInfo: %+v, %v; want world.ErrCorrupt", what, info, err)
		}
	}
	// An empty object at the tail of an open stream: not a close.
	f := newMemS3()
	run := closedStream(t, f, "s", false, []int{1, 2})
	tail := objectKey(run, "s", 2)
	f.setObject(tail, nil, map[string]string{"count": "0"})
	for _, start := range []int64{0, 2, -1} {
		wantCorruptRead(t, f, run, "s", start, tail, "an empty object at the tail")
	}
	s := limitedStreamers(t, f, 1, 0)[0]
	if err := writeBytes(s, run, "s", 3); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("a write after an empty object at the tail: %v, want world.ErrCorrupt (not a closed stream)", err)
	}
	if err := s.CloseStream(ctx, &world.CloseStreamParams{RunID: run, Name: "s"}); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("a close after an empty object at the tail: %v, want world.ErrCorrupt", err)
	}
	// What an earlier version's close looked like says so.
	_, err := limitedStreamers(t, f, 1, 0)[0].ReadStream(ctx, &world.ReadStreamParams{RunID: run, Name: "s"})
	if err == nil || !strings.Contains(err.Error(), "close marker of an earlier version") {
		t.Fatalf("a stream closed by an earlier version: %v, want a refusal that says so", err)
	}
}

// TestMarkerVerifiesAtItsPlace: a close marker copied, with its metadata,
// to another run's tail, moved to another index, given other recorded
// bytes, or replaced by other bytes of its size, is world.ErrCorrupt
// naming it, never the stream's end.
func TestMarkerVerifiesAtItsPlace(t *testing.T) {
	f := newMemS3()
	runA := closedStream(t, f, "s", true, []int{1, 2})
	runB := closedStream(t, f, "s", false, []int{3, 4})
	markerA := objectKey(runA, "s", 2)
	body, meta := f.object(markerA)
	if len(body) != 9 {
		t.Fatalf("the close marker is %d bytes, want 9", len(body))
	}
	to := objectKey(runB, "s", 2)
	f.setObject(to, body, meta)
	wantCorruptRead(t, f, runB, "s", 0, to, "run A's marker at run B's tail")
	f.deleteObject(to)

	moved := closedStream(t, f, "s", false, []int{1, 2, 3})
	to = objectKey(moved, "s", 3)
	f.setObject(to, body, meta)
	wantCorruptRead(t, f, moved, "s", 0, to, "a marker at another index")

	other := maps.Clone(meta)
	other["bytes"] = "4"
	f.setObject(markerA, body, other)
	wantCorruptRead(t, f, runA, "s", 0, markerA, "a marker with other recorded bytes")
	f.setObject(markerA, []byte("SKS3\x00\x00\x00\x00\x00"), meta)
	wantCorruptRead(t, f, runA, "s", 2, markerA, "nine other bytes")
	f.setObject(markerA, body, meta)
	p, err := limitedStreamers(t, f, 1, 0)[0].ReadStream(context.Background(), &world.ReadStreamParams{RunID: runA, Name: "s"})
	if err != nil || !p.Done || len(p.Chunks) != 2 {
		t.Fatalf("the marker back in place: %+v, %v; want 2 chunks and done", p, err)
	}
}

// TestTruncationsRefused: a stream whose listing or objects say it is
// shorter (or other) than it was written is world.ErrCorrupt naming an
// object: a missing object in the middle (read from before it, inside it
// or after it), an object after the close marker, a marker at the right
// place whose stream holds fewer chunks than it records, and one whose
// recorded data bytes disagree with the object before it.
func TestTruncationsRefused(t *testing.T) {
	t.Run("missing object", func(t *testing.T) {
		for _, closed := range []bool{true, false} {
			f := newMemS3()
			run := closedStream(t, f, "s", closed, []int{1, 2, 3, 4}, []int{5, 6, 7, 8}, []int{9, 10})
			f.deleteObject(objectKey(run, "s", 4))
			after := objectKey(run, "s", 8)
			for _, start := range []int64{0, 3, 4, 6} {
				wantCorruptRead(t, f, run, "s", start, after, fmt.Sprintf("closed %v, the object at 4 missing", closed))
			}
		}
	})
	t.Run("object after the marker", func(t *testing.T) {
		// An old marker copied back over the stream's next object: the
		// marker verifies there, and an object follows it.
		f, old := newMemS3(), newMemS3()
		run := closedStream(t, f, "s", false, []int{1, 2, 3, 4}, []int{5}, []int{6})
		s := limitedStreamers(t, old, 1, 0)[0]
		if err := writeBytes(s, run, "s", 1, 2, 3, 4); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseStream(context.Background(), &world.CloseStreamParams{RunID: run, Name: "s"}); err != nil {
			t.Fatal(err)
		}
		f.copyFrom(old, objectKey(run, "s", 4))
		for _, start := range []int64{0, 4, 5} {
			wantCorruptRead(t, f, run, "s", start, objectKey(run, "s", 5), "an object after the marker")
		}
		if _, err := limitedStreamers(t, f, 1, 0)[0].StreamInfo(context.Background(), &world.StreamInfoParams{RunID: run, Name: "s"}); !errors.Is(err, world.ErrCorrupt) {
			t.Fatalf("StreamInfo with an object after the marker: %v, want world.ErrCorrupt", err)
		}
	})
	t.Run("marker past the chunks", func(t *testing.T) {
		// A stream of 3 chunks under a marker sealed for 4.
		f, old := newMemS3(), newMemS3()
		run := closedStream(t, f, "s", false, []int{1, 2, 3})
		closedInto(t, old, run, 1, 2, 3, 4)
		marker := objectKey(run, "s", 4)
		f.copyFrom(old, marker)
		for _, start := range []int64{0, 2, 3} {
			wantCorruptRead(t, f, run, "s", start, marker, "a marker at 4 after 3 chunks")
		}
	})
	t.Run("marker bytes disagree", func(t *testing.T) {
		f, old := newMemS3(), newMemS3()
		run := closedStream(t, f, "s", false, []int{2, 2, 2, 2})
		closedInto(t, old, run, 1, 1, 1, 1)
		marker := objectKey(run, "s", 4)
		f.copyFrom(old, marker)
		wantCorruptRead(t, f, run, "s", 0, marker, "a marker recording 4 bytes after 8")
	})
}

// closedInto writes chunks of sizes to run's stream "s" on f and closes it.
func closedInto(t *testing.T, f *memS3, run string, sizes ...int) {
	t.Helper()
	s := limitedStreamers(t, f, 1, 0)[0]
	if err := writeBytes(s, run, "s", sizes...); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseStream(context.Background(), &world.CloseStreamParams{RunID: run, Name: "s"}); err != nil {
		t.Fatal(err)
	}
}

// TestCloseCosts: what verifying the close marker costs. A page that does
// not reach the close GETs its data objects only; the page that ends a
// closed stream GETs the 9-byte marker beside them; StreamInfo of a
// closed stream is one LIST and one GET of the marker (an open stream's:
// one LIST and one HEAD).
func TestCloseCosts(t *testing.T) {
	ctx := context.Background()
	f := newMemS3()
	run := closedStream(t, f, "s", true, []int{1, 1, 1, 1}, []int{1, 1, 1, 1}, []int{1, 1})
	open := closedStream(t, f, "s", false, []int{1, 1})
	s := limitedStreamers(t, f, 1, 0)[0]
	for _, tc := range []struct {
		what               string
		run                string
		start              int64
		limit              int
		list, get, head    int
		wantDone, wantInfo bool
	}{
		{"a page short of the close", run, 0, 6, 1, 2, 0, false, false},
		{"the page that ends the stream", run, 4, 100, 1, 3, 0, true, false},
		{"the empty page at the close", run, 10, 100, 1, 1, 0, true, false},
		{"StreamInfo, closed", run, 0, 0, 1, 1, 0, true, true},
		{"StreamInfo, open", open, 0, 0, 1, 0, 1, false, true},
	} {
		before := map[string]int{}
		for _, op := range []string{"ListObjectsV2", "GetObject", "HeadObject"} {
			before[op] = f.count(op)
		}
		var done bool
		if tc.wantInfo {
			info, err := s.StreamInfo(ctx, &world.StreamInfoParams{RunID: tc.run, Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			done = info.Done
		} else {
			p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: tc.run, Name: "s", Start: tc.start, Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			done = p.Done
		}
		got := [3]int{f.count("ListObjectsV2") - before["ListObjectsV2"], f.count("GetObject") - before["GetObject"], f.count("HeadObject") - before["HeadObject"]}
		if want := [3]int{tc.list, tc.get, tc.head}; got != want || done != tc.wantDone {
			t.Errorf("%s: LIST, GET, HEAD %v, done %v; want %v, done %v", tc.what, got, done, want, tc.wantDone)
		}
	}
}

// TestReaderWithSmallerObjects: a reader whose maxChunksPerObject (a knob) is
// smaller than its writer's does not list far enough back to find the
// object that holds its start; it lists again from the stream's first
// object and reads the page, where it saw a gap (a false world.ErrCorrupt),
// or a closed stream that never ended.
func TestReaderWithSmallerObjects(t *testing.T) {
	f := newMemS3()
	w, err := streams.New(streams.Config{S3: f, Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	run := ids.New(world.PrefixRun)
	if err := writeBytes(w, run, "s", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10); err != nil {
		t.Fatal(err)
	}
	if err := writeBytes(w, run, "s", 11); err != nil {
		t.Fatal(err)
	}
	if err := w.CloseStream(context.Background(), &world.CloseStreamParams{RunID: run, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	r := limitedStreamers(t, f, 1, 0)[0] // 4 chunks an object
	for _, start := range []int64{6, 9, 10} {
		p, err := r.ReadStream(context.Background(), &world.ReadStreamParams{RunID: run, Name: "s", Start: start})
		if err != nil || !p.Done || int64(len(p.Chunks)) != 11-start || p.Chunks[0].Index != start || len(p.Chunks[0].Data) != int(start+1) {
			t.Fatalf("read from %d by a reader of smaller objects: %+v, %v; want chunks %d to 10 and done", start, p, err, start)
		}
	}
}
