package localworld

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func TestStreams(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		runID := testIDs.New(world.PrefixRun)
		write := func(name string, chunks ...string) {
			t.Helper()
			var cs [][]byte
			for _, c := range chunks {
				cs = append(cs, []byte(c))
			}
			if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: name, Chunks: cs}); err != nil {
				t.Fatalf("WriteStream(%s): %v", name, err)
			}
		}
		read := func(start int64, limit int) *world.StreamPage {
			t.Helper()
			p, err := w.ReadStream(ctx, &world.ReadStreamParams{RunID: runID, Name: "out", Start: start, Limit: limit})
			if err != nil {
				t.Fatalf("ReadStream: %v", err)
			}
			return p
		}
		data := func(p *world.StreamPage) string {
			s := ""
			for _, c := range p.Chunks {
				s += fmt.Sprintf("%d:%s ", c.Index, c.Data)
			}
			return s
		}
		// Missing stream: empty, not done.
		if p := read(0, 0); len(p.Chunks) != 0 || p.Done || p.Next != 0 {
			t.Fatalf("missing stream: %+v", p)
		}
		if info, err := w.StreamInfo(ctx, &world.StreamInfoParams{RunID: runID, Name: "out"}); err != nil || info.TailIndex != -1 || info.Done {
			t.Fatalf("missing stream info: %+v, %v", info, err)
		}
		write("out", "a", "b", "c")
		write("out", "d")
		write("log")
		write("err", "x")
		if got := data(read(0, 0)); got != "0:a 1:b 2:c 3:d " {
			t.Fatalf("read all: %q", got)
		}
		if p := read(1, 2); data(p) != "1:b 2:c " || p.Next != 3 || p.Done {
			t.Fatalf("read 1..2: %+v", p)
		}
		if p := read(-2, 0); data(p) != "2:c 3:d " || p.Next != 4 {
			t.Fatalf("read -2: %+v", p)
		}
		if p := read(-10, 0); data(p) != "0:a 1:b 2:c 3:d " {
			t.Fatalf("read -10: %+v", p)
		}
		if p := read(9, 0); len(p.Chunks) != 0 || p.Next != 9 {
			t.Fatalf("read past end: %+v", p)
		}
		if err := w.CloseStream(ctx, &world.CloseStreamParams{RunID: runID, Name: "out"}); err != nil {
			t.Fatal(err)
		}
		if err := w.CloseStream(ctx, &world.CloseStreamParams{RunID: runID, Name: "out"}); err != nil {
			t.Fatalf("second close: %v", err)
		}
		if p := read(2, 0); !p.Done || p.Next != 4 {
			t.Fatalf("read closed stream: %+v", p)
		}
		if p := read(0, 2); p.Done {
			t.Fatalf("page short of the end is done: %+v", p)
		}
		err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "out", Chunks: [][]byte{[]byte("late")}})
		wantErrIs(t, err, world.ErrConflict, "write to closed stream")
		info, err := w.StreamInfo(ctx, &world.StreamInfoParams{RunID: runID, Name: "out"})
		if err != nil || info.TailIndex != 3 || !info.Done {
			t.Fatalf("info: %+v, %v", info, err)
		}
		names, err := w.ListStreams(ctx, &world.ListStreamsParams{RunID: runID})
		if err != nil || !slices.Equal(names, []string{"err", "log", "out"}) {
			t.Fatalf("ListStreams: %v, %v", names, err)
		}
		other, err := w.ListStreams(ctx, &world.ListStreamsParams{RunID: testIDs.New(world.PrefixRun)})
		if err != nil || len(other) != 0 {
			t.Fatalf("ListStreams(other run): %v, %v", other, err)
		}
		err = w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "bad name"})
		wantErrIs(t, err, world.ErrInvalid, "bad stream name")
	})
}

func TestStreamLimits(t *testing.T) {
	t.Parallel()
	w := mustOpen(t, Config{})
	ctx := context.Background()
	runID := testIDs.New(world.PrefixRun)
	chunks := make([][]byte, 1500)
	for i := range chunks {
		chunks[i] = []byte{byte(i)}
	}
	if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "s", Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ limit, want int }{{0, DefaultStreamReadLimit}, {5000, MaxStreamReadLimit}, {7, 7}} {
		p, err := w.ReadStream(ctx, &world.ReadStreamParams{RunID: runID, Name: "s", Limit: c.limit})
		if err != nil || len(p.Chunks) != c.want {
			t.Fatalf("limit %d: %d chunks, %v", c.limit, len(p.Chunks), err)
		}
	}
}

// A write that would take a stream past Limits.MaxStreamBytes is refused
// whole, typed, and the stream keeps what it had; another stream has its
// own bound.
func TestStreamBytesLimit(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		cfg := m.config(t)
		cfg.Limits = world.Limits{MaxStreamBytes: 100}
		w := mustOpen(t, cfg)
		ctx := context.Background()
		runID := testIDs.New(world.PrefixRun)
		write := func(name string, n ...int) error {
			var cs [][]byte
			for _, k := range n {
				cs = append(cs, make([]byte, k))
			}
			return w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: name, Chunks: cs})
		}
		if err := write("s", 60, 40); err != nil {
			t.Fatal(err)
		}
		err := write("s", 1)
		var le *world.LimitError
		if !errors.As(err, &le) || !errors.Is(err, world.ErrLimitExceeded) || le.Limit != "stream bytes" || le.Max != 100 || le.Size != 101 {
			t.Fatalf("write past the limit: %v, want a *world.LimitError of stream bytes, 101 of 100", err)
		}
		if info, err := w.StreamInfo(ctx, &world.StreamInfoParams{RunID: runID, Name: "s"}); err != nil || info.TailIndex != 1 {
			t.Fatalf("stream after the refusal: %+v, %v; want its 2 chunks", info, err)
		}
		if err := write("t", 100); err != nil {
			t.Fatalf("another stream: %v", err)
		}
		if err := write("t", 50, 51); err == nil {
			t.Fatal("a write of several chunks past the limit was accepted")
		}
	})
}

// A run may open Limits.MaxStreams streams: the next one (by a write or a
// close) is refused, typed, and writes nothing, while the run's existing
// streams take writes as before, and another run has its own bound.
func TestStreamCountLimit(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		cfg := m.config(t)
		cfg.Limits = world.Limits{MaxStreams: 3}
		w := mustOpen(t, cfg)
		ctx := context.Background()
		runID := testIDs.New(world.PrefixRun)
		write := func(run, name string) error {
			return w.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: name, Chunks: [][]byte{[]byte(name)}})
		}
		for _, name := range []string{"a", "b", "c"} {
			if err := write(runID, name); err != nil {
				t.Fatal(err)
			}
		}
		refused := func(err error, what string) {
			t.Helper()
			var le *world.LimitError
			if !errors.As(err, &le) || !errors.Is(err, world.ErrLimitExceeded) || le.Limit != "streams" || le.Max != 3 || le.Size != 4 || le.RunID != runID || le.Code() != world.CodeLimitExceeded {
				t.Fatalf("%s: %v, want a *world.LimitError of streams, 4 of 3", what, err)
			}
		}
		refused(write(runID, "d"), "a 4th stream")
		refused(w.CloseStream(ctx, &world.CloseStreamParams{RunID: runID, Name: "e"}), "closing a 4th stream")
		if err := write(runID, "a"); err != nil {
			t.Fatalf("a write to an existing stream at the bound: %v", err)
		}
		if err := w.CloseStream(ctx, &world.CloseStreamParams{RunID: runID, Name: "b"}); err != nil {
			t.Fatalf("closing an existing stream at the bound: %v", err)
		}
		names, err := w.ListStreams(ctx, &world.ListStreamsParams{RunID: runID})
		if err != nil || fmt.Sprint(names) != "[a b c]" {
			t.Fatalf("ListStreams: %v, %v; want [a b c]", names, err)
		}
		if info, err := w.StreamInfo(ctx, &world.StreamInfoParams{RunID: runID, Name: "a"}); err != nil || info.TailIndex != 1 {
			t.Fatalf("stream a: %+v, %v; want its 2 chunks", info, err)
		}
		if err := write(testIDs.New(world.PrefixRun), "d"); err != nil {
			t.Fatalf("a stream of another run: %v", err)
		}
	})
}

// Concurrent writers each get their chunks contiguous.
func TestStreamConcurrentWriters(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		runID := testIDs.New(world.PrefixRun)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 10 {
					cs := [][]byte{[]byte(fmt.Sprintf("%d.%d.0", g, i)), []byte(fmt.Sprintf("%d.%d.1", g, i))}
					if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "s", Chunks: cs}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		p, err := w.ReadStream(ctx, &world.ReadStreamParams{RunID: runID, Name: "s"})
		if err != nil || len(p.Chunks) != 80 {
			t.Fatalf("read: %d chunks, %v", len(p.Chunks), err)
		}
		for i := 0; i < 80; i += 2 {
			a, b := string(p.Chunks[i].Data), string(p.Chunks[i+1].Data)
			if p.Chunks[i].Index != int64(i) || a[:len(a)-1] != b[:len(b)-1] || a[len(a)-1] != '0' {
				t.Fatalf("chunks %d,%d = %q,%q: a write was split", i, i+1, a, b)
			}
		}
	})
}

func TestStreamNotifierAndTail(t *testing.T) {
	t.Parallel()
	w := mustOpen(t, Config{})
	ctx := context.Background()
	runID := testIDs.New(world.PrefixRun)
	changed := w.StreamChanged(runID, "s")
	select {
	case <-changed:
		t.Fatal("channel closed before any write")
	default:
	}
	go func() {
		for i := range 5 {
			time.Sleep(5 * time.Millisecond)
			_ = w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "s", Chunks: [][]byte{{byte('a' + i)}}})
		}
		_ = w.CloseStream(ctx, &world.CloseStreamParams{RunID: runID, Name: "s"})
	}()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("not notified of a write")
	}
	// Tail with a poll interval far longer than the test: only the
	// notifier can wake it in time.
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var got string
	for c, err := range world.Tail(tctx, w, world.TailParams{RunID: runID, Name: "s", PollMin: time.Hour, PollMax: time.Hour}) {
		if err != nil {
			t.Fatalf("Tail: %v", err)
		}
		got += string(c.Data)
	}
	if got != "abcde" {
		t.Fatalf("Tail read %q", got)
	}
	// Close wakes watchers.
	ch := w.StreamChanged(runID, "other")
	_ = w.Close()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake a watcher")
	}
	if _, err := w.ReadStream(ctx, &world.ReadStreamParams{RunID: runID, Name: "s"}); !errors.Is(err, world.ErrClosed) {
		t.Fatalf("ReadStream after Close: %v", err)
	}
}

// StreamChanged keeps a channel only for a stream that may still change,
// and for at most maxStreamWatches streams: a Tail that reads a closed
// stream to its end leaves nothing behind, watches of streams no one
// writes again cannot grow without bound (the ones past the bound are
// woken after watchPollMax to look again), and a ReadOnly World keeps
// none.
func TestStreamWatchesBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	watched := func(w *World) int {
		w.s.mu.Lock()
		defer w.s.mu.Unlock()
		return len(w.s.streamChs)
	}
	path := filepath.Join(t.TempDir(), "world.skein")
	w := mustOpen(t, Config{Path: path, Sync: SyncNone, watchPollMax: time.Millisecond})
	var closed []string
	for range 50 {
		runID := testIDs.New(world.PrefixRun)
		if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "s", Chunks: [][]byte{[]byte("x")}}); err != nil {
			t.Fatal(err)
		}
		if err := w.CloseStream(ctx, &world.CloseStreamParams{RunID: runID, Name: "s"}); err != nil {
			t.Fatal(err)
		}
		for _, err := range world.Tail(ctx, w, world.TailParams{RunID: runID, Name: "s"}) {
			if err != nil {
				t.Fatal(err)
			}
		}
		closed = append(closed, runID)
	}
	if n := watched(w); n != 0 {
		t.Fatalf("%d streams watched after reading 50 closed streams to their end, want 0", n)
	}
	for _, runID := range closed {
		select {
		case <-w.StreamChanged(runID, "s"):
		default:
			t.Fatal("StreamChanged of a closed stream: a channel that is not closed")
		}
	}

	var extra []<-chan struct{}
	for i := range maxStreamWatches + 100 {
		ch := w.StreamChanged(testIDs.New(world.PrefixRun), "open")
		if i >= maxStreamWatches {
			extra = append(extra, ch)
		}
	}
	if n := watched(w); n != maxStreamWatches {
		t.Fatalf("%d streams watched after watching %d open ones, want the bound, %d", n, maxStreamWatches+100, maxStreamWatches)
	}
	for _, ch := range extra {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("a watch past the bound was not woken to look again")
		}
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, Config{Path: path, ReadOnly: true, watchPollMax: time.Millisecond})
	for range 100 {
		<-ro.StreamChanged(testIDs.New(world.PrefixRun), "open")
	}
	if n := watched(ro); n != 0 {
		t.Fatalf("a ReadOnly World watches %d streams, want none", n)
	}
}

// TestStreamBytesLimitFraming: the bound counts each chunk without its
// writer's framing (WriteStreamParams.Framing): five chunks of 1000 bytes
// and a tag byte each fill a bound of 5000 exactly, and one byte more is
// refused as 5001; a framing out of range is world.ErrInvalid.
func TestStreamBytesLimitFraming(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		cfg := m.config(t)
		cfg.Limits = world.Limits{MaxStreamBytes: 5000}
		w := mustOpen(t, cfg)
		ctx := context.Background()
		runID := testIDs.New(world.PrefixRun)
		write := func(framing int, n ...int) error {
			var cs [][]byte
			for _, k := range n {
				cs = append(cs, make([]byte, k))
			}
			return w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "user.b3V0", Chunks: cs, Framing: framing})
		}
		for i := range 5 {
			if err := write(1, 1001); err != nil {
				t.Fatalf("chunk %d of 1000 bytes and a tag: %v", i, err)
			}
		}
		err := write(1, 2)
		var le *world.LimitError
		if !errors.As(err, &le) || le.Limit != "stream bytes" || le.Max != 5000 || le.Size != 5001 {
			t.Fatalf("one byte more: %v, want a *world.LimitError of stream bytes, 5001 of 5000", err)
		}
		for _, bad := range []struct{ framing, size int }{{-1, 5}, {9, 20}, {2, 1}} {
			if err := write(bad.framing, bad.size); !errors.Is(err, world.ErrInvalid) {
				t.Errorf("framing %d of a %d-byte chunk: %v, want world.ErrInvalid", bad.framing, bad.size, err)
			}
		}
	})
}
