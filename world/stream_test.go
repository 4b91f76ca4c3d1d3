package world_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func TestValidateStreamName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"default", true}, {"a", true}, {"strm_01ARZ3NDEKTSV4RRFFQ69G5FAV_user", true}, {"ns:logs.v1-x_y", true},
		{strings.Repeat("n", world.MaxStreamNameLength), true},
		{"", false}, {strings.Repeat("n", world.MaxStreamNameLength+1), false},
		{"has space", false}, {"a/b", false}, {"a\\b", false}, {"tab\t", false}, {"nul\x00", false}, {"é", false}, {"a*", false},
	} {
		err := world.ValidateStreamName(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, world.ErrInvalid)) {
			t.Errorf("ValidateStreamName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// fakeStreamer is one in-memory stream: enough to unit-test Tail. Reads
// return at most two chunks so that Tail has to page.
type fakeStreamer struct {
	mu      sync.Mutex
	chunks  [][]byte
	closed  bool
	reads   int
	readErr error
	infoErr error
	infos   int // StreamInfo calls
	changed chan struct{}
}

func (s *fakeStreamer) WriteStream(_ context.Context, p *world.WriteStreamParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks = append(s.chunks, p.Chunks...)
	s.signal()
	return nil
}

func (s *fakeStreamer) CloseStream(context.Context, *world.CloseStreamParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.signal()
	return nil
}

func (s *fakeStreamer) signal() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

func (s *fakeStreamer) ReadStream(_ context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.readErr != nil {
		return nil, s.readErr
	}
	if p.Start < 0 {
		return nil, errors.New("fake: Tail must resolve a negative start itself")
	}
	n := int64(len(s.chunks))
	end := min(n, p.Start+2)
	page := &world.StreamPage{Next: max(p.Start, end), Done: s.closed && end >= n}
	for i := p.Start; i < end; i++ {
		page.Chunks = append(page.Chunks, world.StreamChunk{Index: i, Data: s.chunks[i]})
	}
	return page, nil
}

func (s *fakeStreamer) StreamInfo(context.Context, *world.StreamInfoParams) (*world.StreamInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.infos++
	if s.infoErr != nil {
		return nil, s.infoErr
	}
	return &world.StreamInfo{TailIndex: int64(len(s.chunks)) - 1, Done: s.closed}, nil
}

func (s *fakeStreamer) ListStreams(context.Context, *world.ListStreamsParams) ([]string, error) {
	return []string{"s"}, nil
}

// resolved waits until Tail has resolved a negative start (its StreamInfo
// call), so that writes made after it are past the start, however slow the
// machine.
func (s *fakeStreamer) resolved(t *testing.T) {
	t.Helper()
	for limit := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := s.infos
		s.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(limit) {
			t.Fatal("Tail did not resolve its start in a minute")
		}
	}
}

func (s *fakeStreamer) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// notifyingStreamer adds the StreamNotifier capability.
type notifyingStreamer struct{ *fakeStreamer }

func (s notifyingStreamer) StreamChanged(string, string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *fakeStreamer) write(data ...string) {
	for _, d := range data {
		_ = s.WriteStream(context.Background(), &world.WriteStreamParams{Chunks: [][]byte{[]byte(d)}})
	}
}

type tailOut struct {
	chunks []world.StreamChunk
	errs   []error
}

func (o tailOut) data() string {
	var b strings.Builder
	for _, c := range o.chunks {
		b.Write(c.Data)
	}
	return b.String()
}

// collect runs Tail to its end in the background.
func collect(ctx context.Context, s world.Streamer, p world.TailParams) <-chan tailOut {
	out := make(chan tailOut, 1)
	go func() {
		var o tailOut
		for c, err := range world.Tail(ctx, s, p) {
			if err != nil {
				o.errs = append(o.errs, err)
				continue
			}
			o.chunks = append(o.chunks, c)
		}
		out <- o
	}()
	return out
}

func wait(t *testing.T, ch <-chan tailOut) tailOut {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("Tail did not end")
		return tailOut{}
	}
}

func wantIndices(t *testing.T, o tailOut, from int64, data string) {
	t.Helper()
	if len(o.errs) > 0 {
		t.Fatalf("Tail yielded errors %v", o.errs)
	}
	if o.data() != data {
		t.Fatalf("Tail yielded %q, want %q", o.data(), data)
	}
	for i, c := range o.chunks {
		if c.Index != from+int64(i) {
			t.Fatalf("chunk %d has index %d, want %d", i, c.Index, from+int64(i))
		}
	}
}

func TestTailLive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		notify bool
		params world.TailParams
	}{
		{"polling", false, world.TailParams{PollMin: time.Millisecond, PollMax: 5 * time.Millisecond}},
		{"polling defaults", false, world.TailParams{}},
		// With an hour's poll only the notifier can wake the tail in time.
		{"notifier", true, world.TailParams{PollMin: time.Hour, PollMax: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := &fakeStreamer{}
			var s world.Streamer = fs
			if tc.notify {
				s = notifyingStreamer{fs}
			}
			res := collect(t.Context(), s, tc.params)
			for _, d := range []string{"a", "b", "c", "d", "e"} {
				time.Sleep(5 * time.Millisecond)
				fs.write(d)
			}
			time.Sleep(5 * time.Millisecond)
			_ = fs.CloseStream(t.Context(), nil)
			wantIndices(t, wait(t, res), 0, "abcde")
		})
	}
}

func TestTailClosedStream(t *testing.T) {
	t.Parallel()
	fs := &fakeStreamer{}
	fs.write("a", "b", "c", "d", "e")
	_ = fs.CloseStream(t.Context(), nil)
	wantIndices(t, wait(t, collect(t.Context(), fs, world.TailParams{PollMin: time.Hour})), 0, "abcde")
	wantIndices(t, wait(t, collect(t.Context(), fs, world.TailParams{Start: 3, PollMin: time.Hour})), 3, "de")
	fs2 := &fakeStreamer{}
	_ = fs2.CloseStream(t.Context(), nil)
	wantIndices(t, wait(t, collect(t.Context(), fs2, world.TailParams{PollMin: time.Hour})), 0, "")
}

func TestTailNegativeStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		start int64
		from  int64
		want  string
	}{
		{-1, 3, "dXY"}, {-2, 2, "cdXY"}, {-4, 0, "abcdXY"}, {-100, 0, "abcdXY"},
	} {
		t.Run(fmt.Sprint(tc.start), func(t *testing.T) {
			t.Parallel()
			fs := &fakeStreamer{}
			fs.write("a", "b", "c", "d")
			s := notifyingStreamer{fs}
			res := collect(t.Context(), s, world.TailParams{Start: tc.start})
			fs.resolved(t)
			// Resolved once at the start: later writes do not move it.
			fs.write("X", "Y")
			_ = fs.CloseStream(t.Context(), nil)
			wantIndices(t, wait(t, res), tc.from, tc.want)
		})
	}
	// On an empty stream, -1 starts at 0.
	fs := &fakeStreamer{}
	res := collect(t.Context(), notifyingStreamer{fs}, world.TailParams{Start: -1})
	fs.resolved(t)
	fs.write("a")
	_ = fs.CloseStream(t.Context(), nil)
	wantIndices(t, wait(t, res), 0, "a")
}

func TestTailContextEnds(t *testing.T) {
	t.Parallel()
	for _, notify := range []bool{false, true} {
		fs := &fakeStreamer{}
		fs.write("a")
		var s world.Streamer = fs
		if notify {
			s = notifyingStreamer{fs}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		o := wait(t, collect(ctx, s, world.TailParams{PollMin: time.Millisecond, PollMax: 5 * time.Millisecond}))
		cancel()
		if o.data() != "a" || len(o.errs) != 1 || !errors.Is(o.errs[0], context.DeadlineExceeded) {
			t.Fatalf("Tail of an open stream until the deadline (notifier %v): %q and errors %v, want \"a\" then DeadlineExceeded", notify, o.data(), o.errs)
		}
	}
}

func TestTailStopsWhenConsumerStops(t *testing.T) {
	t.Parallel()
	fs := &fakeStreamer{}
	fs.write("a", "b", "c", "d", "e")
	n := 0
	// Range-over-func panics if Tail yields after the loop body breaks.
	for _, err := range world.Tail(t.Context(), fs, world.TailParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	reads := fs.readCount()
	time.Sleep(20 * time.Millisecond)
	if fs.readCount() != reads {
		t.Fatal("Tail kept reading after its consumer stopped")
	}
}

func TestTailErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	fs := &fakeStreamer{readErr: boom}
	o := wait(t, collect(t.Context(), fs, world.TailParams{}))
	if len(o.errs) != 1 || !errors.Is(o.errs[0], boom) || len(o.chunks) != 0 {
		t.Fatalf("Tail over a failing ReadStream: %+v, want one error", o)
	}
	fs = &fakeStreamer{infoErr: boom}
	o = wait(t, collect(t.Context(), fs, world.TailParams{Start: -1}))
	if len(o.errs) != 1 || !errors.Is(o.errs[0], boom) {
		t.Fatalf("Tail from -1 over a failing StreamInfo: %+v, want one error", o)
	}
}

// readsUntil cancels a Tail once it has read n times.
type readsUntil struct {
	*fakeStreamer
	n      int
	cancel context.CancelFunc
}

func (s readsUntil) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	page, err := s.fakeStreamer.ReadStream(ctx, p)
	if s.readCount() >= s.n {
		s.cancel()
	}
	return page, err
}

// TestTailPollBackoffCapped counts polls, not time: capped at PollMax 2ms, a
// tail over a stream that stays empty polls 30 times in about 60ms; with
// the backoff doubling from 1ms uncapped, the 30th poll would come after
// 2^29 ms (about 6 days), so it does not come within the 5s bound, however
// slow the machine is.
func TestTailPollBackoffCapped(t *testing.T) {
	t.Parallel()
	const polls = 30
	fs := &fakeStreamer{}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	wait(t, collect(ctx, readsUntil{fs, polls, cancel}, world.TailParams{PollMin: time.Millisecond, PollMax: 2 * time.Millisecond}))
	if r := fs.readCount(); r < polls {
		t.Fatalf("Tail polled %d times in 5s with PollMax 2ms, want %d (in about 60ms): the backoff is not capped", r, polls)
	}
}

// TestDataBytes: a stream's bound counts what the writer wrote, less its
// framing, and at least a byte a chunk, so that empty writes cannot add
// chunks without end.
func TestDataBytes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		chunks  [][]byte
		framing int
		want    int64
		invalid bool
	}{
		{"plain", [][]byte{[]byte("abc"), []byte("de")}, 0, 5, false},
		{"framed", [][]byte{[]byte("xabc"), []byte("xde")}, 1, 5, false},
		{"empty writes count a byte each", [][]byte{[]byte("x"), []byte("x"), []byte("x")}, 1, 3, false},
		{"an empty chunk counts a byte", [][]byte{[]byte("ab"), {}}, 0, 3, false},
		{"chunk shorter than its framing", [][]byte{[]byte("x")}, 2, 0, true},
		{"framing out of range", [][]byte{[]byte("abcdefghijk")}, 9, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &world.WriteStreamParams{RunID: "r", Name: "s", Chunks: tc.chunks, Framing: tc.framing}
			got, err := p.DataBytes()
			if tc.invalid {
				if !errors.Is(err, world.ErrInvalid) {
					t.Fatalf("DataBytes = %d, %v; want ErrInvalid", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DataBytes = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
