package worldtest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func streamCases() []testCase {
	return []testCase{
		{"write_read_in_order", testStreamOrder},
		{"read_from_index", testStreamReadFrom},
		{"limit_and_next", testStreamLimitNext},
		{"close", testStreamClose},
		{"close_unwritten_stream", testStreamCloseEmpty},
		{"unknown_stream", testStreamUnknown},
		{"info", testStreamInfo},
		{"list_per_run_sorted", testStreamList},
		{"invalid_name", testStreamInvalidName},
		{"concurrent_writers", testStreamConcurrentWriters},
		{"tail_live", testStreamTail},
		{"tail_negative_start", testStreamTailNegative},
		{"notifier", testStreamNotifier},
	}
}

func chunks(data ...string) [][]byte {
	out := make([][]byte, len(data))
	for i, d := range data {
		out[i] = []byte(d)
	}
	return out
}

func (f *fixture) write(run, name string, data ...string) {
	f.t.Helper()
	if err := f.w.WriteStream(f.ctx, &world.WriteStreamParams{RunID: run, Name: name, Chunks: chunks(data...)}); err != nil {
		f.t.Fatalf("WriteStream(%s, %s): %v", run, name, err)
	}
}

func (f *fixture) closeStream(run, name string) {
	f.t.Helper()
	if err := f.w.CloseStream(f.ctx, &world.CloseStreamParams{RunID: run, Name: name}); err != nil {
		f.t.Fatalf("CloseStream(%s, %s): %v", run, name, err)
	}
}

func (f *fixture) read(run, name string, start int64, limit int) *world.StreamPage {
	f.t.Helper()
	p, err := f.w.ReadStream(f.ctx, &world.ReadStreamParams{RunID: run, Name: name, Start: start, Limit: limit})
	if err != nil {
		f.t.Fatalf("ReadStream(%s, %s, start %d, limit %d): %v", run, name, start, limit, err)
	}
	return p
}

// readAllChunks reads a stream from 0 to its current end, page by page.
func (f *fixture) readAllChunks(run, name string) ([]world.StreamChunk, bool) {
	f.t.Helper()
	var all []world.StreamChunk
	next := int64(0)
	for range 100000 {
		p := f.read(run, name, next, 100)
		all = append(all, p.Chunks...)
		if len(p.Chunks) == 0 || p.Done {
			return all, p.Done
		}
		if p.Next != next+int64(len(p.Chunks)) {
			f.t.Fatalf("ReadStream from %d returned %d chunks and Next %d", next, len(p.Chunks), p.Next)
		}
		next = p.Next
	}
	f.t.Fatal("ReadStream: too many pages")
	return nil, false
}

// wantChunks checks indices and data of a page's chunks.
func wantChunks(t *testing.T, what string, got []world.StreamChunk, from int64, data ...string) {
	t.Helper()
	if len(got) != len(data) {
		t.Fatalf("%s: %d chunks, want %d (%q)", what, len(got), len(data), data)
	}
	for i, c := range got {
		if c.Index != from+int64(i) || !bytes.Equal(c.Data, []byte(data[i])) {
			t.Fatalf("%s: chunk %d is {%d %q}, want {%d %q}", what, i, c.Index, c.Data, from+int64(i), data[i])
		}
	}
}

func testStreamOrder(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.write(run, "out", "a", "b")
	f.write(run, "out", "c")
	f.write(run, "out", "\x00\xff\xfe binary", "d")
	p := f.read(run, "out", 0, 100)
	wantChunks(t, "ReadStream from 0", p.Chunks, 0, "a", "b", "c", "\x00\xff\xfe binary", "d")
	if p.Next != 5 || p.Done {
		t.Fatalf("ReadStream of an open stream to its end: Next %d Done %v, want 5 and not done", p.Next, p.Done)
	}
}

func testStreamReadFrom(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.write(run, "s", "c0", "c1", "c2", "c3")
	for _, tc := range []struct {
		start int64
		from  int64
		data  []string
	}{
		{0, 0, []string{"c0", "c1", "c2", "c3"}},
		{2, 2, []string{"c2", "c3"}},
		{3, 3, []string{"c3"}},
		{4, 4, nil},
		{9, 9, nil},
		{-1, 3, []string{"c3"}},
		{-2, 2, []string{"c2", "c3"}},
		{-4, 0, []string{"c0", "c1", "c2", "c3"}},
		{-10, 0, []string{"c0", "c1", "c2", "c3"}},
	} {
		p := f.read(run, "s", tc.start, 100)
		wantChunks(t, fmt.Sprintf("ReadStream from %d", tc.start), p.Chunks, tc.from, tc.data...)
		if len(tc.data) > 0 && p.Next != 4 {
			t.Fatalf("ReadStream from %d: Next %d, want 4", tc.start, p.Next)
		}
	}
}

func testStreamLimitNext(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.write(run, "s", "0", "1", "2", "3", "4")
	f.closeStream(run, "s")
	var got []string
	next := int64(0)
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("ReadStream with limit 2 never reached the end")
		}
		p := f.read(run, "s", next, 2)
		if len(p.Chunks) > 2 {
			t.Fatalf("ReadStream with limit 2 returned %d chunks", len(p.Chunks))
		}
		for _, c := range p.Chunks {
			got = append(got, string(c.Data))
		}
		end := next+int64(len(p.Chunks)) == 5
		if p.Done != end {
			t.Fatalf("ReadStream from %d (limit 2) of a closed 5-chunk stream: Done %v, want %v", next, p.Done, end)
		}
		if p.Next != next+int64(len(p.Chunks)) {
			t.Fatalf("ReadStream from %d: %d chunks and Next %d", next, len(p.Chunks), p.Next)
		}
		if p.Done {
			break
		}
		next = p.Next
	}
	if !slices.Equal(got, []string{"0", "1", "2", "3", "4"}) {
		t.Fatalf("paged read: %q", got)
	}
	p := f.read(run, "s", -1, 1)
	wantChunks(t, "ReadStream from -1, limit 1", p.Chunks, 4, "4")
	if !p.Done {
		t.Fatal("ReadStream of the last chunk of a closed stream: not Done")
	}
}

func testStreamClose(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.write(run, "s", "a", "b")
	if p := f.read(run, "s", 0, 100); p.Done {
		t.Fatal("an open stream reads as Done")
	}
	f.closeStream(run, "s")
	f.closeStream(run, "s") // idempotent
	err := f.w.WriteStream(f.ctx, &world.WriteStreamParams{RunID: run, Name: "s", Chunks: chunks("late")})
	wantErr(t, err, world.ErrConflict, "WriteStream after CloseStream")
	p := f.read(run, "s", 0, 100)
	wantChunks(t, "ReadStream of a closed stream", p.Chunks, 0, "a", "b")
	if !p.Done {
		t.Fatal("a closed stream read to its end is not Done")
	}
	if p := f.read(run, "s", 1, 1); !p.Done {
		t.Fatal("a closed stream read from 1 with limit 1 (its last chunk) is not Done")
	}
	if p := f.read(run, "s", 0, 1); p.Done {
		t.Fatal("a page that does not reach the end of a closed stream is Done")
	}
	if p := f.read(run, "s", 2, 10); !p.Done || len(p.Chunks) != 0 {
		t.Fatalf("ReadStream at the end of a closed stream: %d chunks Done %v, want none and Done", len(p.Chunks), p.Done)
	}
}

func testStreamCloseEmpty(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.closeStream(run, "never-written")
	info, err := f.w.StreamInfo(f.ctx, &world.StreamInfoParams{RunID: run, Name: "never-written"})
	if err != nil || info.TailIndex != -1 || !info.Done {
		t.Fatalf("StreamInfo of a stream closed without writes: %+v, %v; want TailIndex -1 and Done", info, err)
	}
	if p := f.read(run, "never-written", 0, 10); len(p.Chunks) != 0 || !p.Done {
		t.Fatalf("ReadStream of a stream closed without writes: %d chunks Done %v, want none and Done", len(p.Chunks), p.Done)
	}
	names, err := f.w.ListStreams(f.ctx, &world.ListStreamsParams{RunID: run})
	if err != nil || !slices.Equal(names, []string{"never-written"}) {
		t.Fatalf("ListStreams after closing an unwritten stream: %v, %v", names, err)
	}
}

func testStreamUnknown(t *testing.T, f *fixture) {
	run := f.startedRun()
	for _, start := range []int64{0, 3, -1} {
		p := f.read(run, "nothing", start, 10)
		if len(p.Chunks) != 0 || p.Done {
			t.Fatalf("ReadStream(start %d) of an unknown stream: %d chunks Done %v, want an empty page that is not done", start, len(p.Chunks), p.Done)
		}
	}
	info, err := f.w.StreamInfo(f.ctx, &world.StreamInfoParams{RunID: run, Name: "nothing"})
	if err != nil || info.TailIndex != -1 || info.Done {
		t.Fatalf("StreamInfo of an unknown stream: %+v, %v; want TailIndex -1, not done", info, err)
	}
}

func testStreamInfo(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.write(run, "s", "a")
	for i, want := range []int64{0, 2} {
		info, err := f.w.StreamInfo(f.ctx, &world.StreamInfoParams{RunID: run, Name: "s"})
		if err != nil || info.TailIndex != want || info.Done {
			t.Fatalf("StreamInfo #%d: %+v, %v; want TailIndex %d, not done", i+1, info, err, want)
		}
		f.write(run, "s", "b", "c")
	}
	f.closeStream(run, "s")
	info, err := f.w.StreamInfo(f.ctx, &world.StreamInfoParams{RunID: run, Name: "s"})
	if err != nil || info.TailIndex != 4 || !info.Done {
		t.Fatalf("StreamInfo after close: %+v, %v; want TailIndex 4 and Done", info, err)
	}
	// Streams are per run: the same name in another run is another stream.
	other := f.startedRun()
	info, err = f.w.StreamInfo(f.ctx, &world.StreamInfoParams{RunID: other, Name: "s"})
	if err != nil || info.TailIndex != -1 || info.Done {
		t.Fatalf("StreamInfo of the same name in another run: %+v, %v; want TailIndex -1", info, err)
	}
}

func testStreamList(t *testing.T, f *fixture) {
	run, other := f.startedRun(), f.startedRun()
	for _, name := range []string{"zeta", "alpha", "m:1", "m.0", "alpha"} {
		f.write(run, name, "x")
	}
	f.write(other, "beta", "y")
	names, err := f.w.ListStreams(f.ctx, &world.ListStreamsParams{RunID: run})
	if want := []string{"alpha", "m.0", "m:1", "zeta"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("ListStreams: %v, %v; want %v (sorted, this run's only)", names, err, want)
	}
	names, err = f.w.ListStreams(f.ctx, &world.ListStreamsParams{RunID: f.startedRun()})
	if err != nil || len(names) != 0 {
		t.Fatalf("ListStreams of a run without streams: %v, %v; want none", names, err)
	}
}

func testStreamInvalidName(t *testing.T, f *fixture) {
	run := f.startedRun()
	for _, name := range []string{"", "has space", "slash/name", strings.Repeat("n", world.MaxStreamNameLength+1)} {
		err := f.w.WriteStream(f.ctx, &world.WriteStreamParams{RunID: run, Name: name, Chunks: chunks("x")})
		wantErr(t, err, world.ErrInvalid, "WriteStream to stream name %q", name)
	}
	f.write(run, strings.Repeat("n", world.MaxStreamNameLength), "x")
}

func testStreamConcurrentWriters(t *testing.T, f *fixture) {
	run := f.startedRun()
	const writes, per = 5, 3
	errs := race(f.o.Racers, func(w int) error {
		for k := range writes {
			var data []string
			for c := range per {
				data = append(data, fmt.Sprintf("w%02d-k%02d-c%d", w, k, c))
			}
			err := f.w.WriteStream(f.ctx, &world.WriteStreamParams{RunID: run, Name: "shared", Chunks: chunks(data...)})
			if err != nil {
				return err
			}
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	all, _ := f.readAllChunks(run, "shared")
	total := f.o.Racers * writes * per
	if len(all) != total {
		t.Fatalf("the stream holds %d chunks, want %d", len(all), total)
	}
	seen := map[string]int64{}
	lastWrite := map[int]int{}
	for i, c := range all {
		if c.Index != int64(i) {
			t.Fatalf("chunk %d has index %d; indices must be dense", i, c.Index)
		}
		s := string(c.Data)
		if _, dup := seen[s]; dup {
			t.Fatalf("chunk %q appears twice", s)
		}
		seen[s] = c.Index
		var w, k, n int
		if _, err := fmt.Sscanf(s, "w%02d-k%02d-c%d", &w, &k, &n); err != nil {
			t.Fatalf("chunk %d holds %q, not a chunk this test wrote", i, s)
		}
		if n != 0 {
			continue
		}
		// The first chunk of a write: the rest of it must follow contiguously.
		for c := 1; c < per; c++ {
			want := fmt.Sprintf("w%02d-k%02d-c%d", w, k, c)
			if i+c >= len(all) || string(all[i+c].Data) != want {
				t.Fatalf("write w%02d-k%02d is not contiguous: chunk %d is not %q", w, k, i+c, want)
			}
		}
		if prev, ok := lastWrite[w]; ok && k <= prev {
			t.Fatalf("writer %d's write %d landed after its write %d", w, prev, k)
		}
		lastWrite[w] = k
	}
}

// tail collects a live tail in the background.
type tailResult struct {
	chunks []world.StreamChunk
	err    error
}

// tailTimeout bounds (times Options.Slow) a live tail in the stream
// cases: only a failing case waits it out.
const tailTimeout = 30 * time.Second

// startTail tails a stream in the background; the second channel closes
// when the tail has delivered its first chunk.
func (f *fixture) startTail(run, name string, start int64, timeout time.Duration) (<-chan tailResult, <-chan struct{}) {
	ctx, cancel := context.WithTimeout(f.ctx, timeout)
	out, first := make(chan tailResult, 1), make(chan struct{})
	go func() {
		defer cancel()
		var r tailResult
		for c, err := range world.Tail(ctx, f.w, world.TailParams{RunID: run, Name: name, Start: start, PollMin: time.Millisecond, PollMax: f.d(50 * time.Millisecond)}) {
			if err != nil {
				r.err = err
				break
			}
			if len(r.chunks) == 0 {
				close(first)
			}
			r.chunks = append(r.chunks, c)
		}
		out <- r
	}()
	return out, first
}

func testStreamTail(t *testing.T, f *fixture) {
	run := f.startedRun()
	timeout := f.d(tailTimeout)
	res, _ := f.startTail(run, "live", 0, timeout)
	time.Sleep(f.d(50 * time.Millisecond))
	want := []string{"one", "two", "three", "four", "five"}
	for _, w := range [][]string{{"one"}, {"two"}, {"three"}, {"four", "five"}} {
		f.write(run, "live", w...)
		time.Sleep(f.d(20 * time.Millisecond))
	}
	f.closeStream(run, "live")
	select {
	case r := <-res:
		if r.err != nil {
			t.Fatalf("Tail ended with %v after %d chunks; want it to end cleanly after the stream closed", r.err, len(r.chunks))
		}
		wantChunks(t, "Tail started before the writer", r.chunks, 0, want...)
	case <-time.After(timeout + f.d(5*time.Second)):
		t.Fatal("Tail did not end after the stream was closed")
	}
}

func testStreamTailNegative(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.write(run, "s", "a", "b", "c")
	res, first := f.startTail(run, "s", -2, f.d(tailTimeout))
	// -2 counts from the tail as the Tail first finds it: write d only
	// once it has (its first chunk), whenever that is on a busy machine.
	select {
	case <-first:
	case r := <-res:
		t.Fatalf("Tail from -2 ended before its first chunk: %v", r.err)
	}
	f.write(run, "s", "d")
	f.closeStream(run, "s")
	r := <-res
	if r.err != nil {
		t.Fatalf("Tail from -2: %v", r.err)
	}
	wantChunks(t, "Tail from -2", r.chunks, 1, "b", "c", "d")
}

func testStreamNotifier(t *testing.T, f *fixture) {
	n, ok := f.w.(world.StreamNotifier)
	if !ok {
		t.Skip("the World is not a StreamNotifier")
	}
	run := f.startedRun()
	for _, step := range []struct {
		what string
		do   func()
	}{
		{"a write", func() { f.write(run, "s", "x") }},
		{"a close", func() { f.closeStream(run, "s") }},
	} {
		ch := n.StreamChanged(run, "s")
		step.do()
		select {
		case <-ch:
		case <-time.After(f.d(tailTimeout)):
			t.Fatalf("StreamChanged was not signalled by %s", step.what)
		}
	}
}
