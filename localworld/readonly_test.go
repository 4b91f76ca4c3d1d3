package localworld

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// A read-only World follows a store another World holds and writes: runs,
// events and stream chunks appear as they commit, across compactions,
// and writes are refused with ErrReadOnly.
func TestReadOnlyFollowsWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "world.db")
	w := mustOpen(t, Config{Path: path, Sync: SyncBatch, compactMin: 64 << 10})
	first := newRun(t, w, "wf")

	r := mustOpen(t, Config{Path: path, ReadOnly: true})
	if _, err := r.GetRun(ctx, &world.GetRunParams{RunID: first}); err != nil {
		t.Fatalf("GetRun of a run made before the read-only open: %v", err)
	}
	second := newRun(t, w, "wf")
	if _, err := r.GetRun(ctx, &world.GetRunParams{RunID: second}); err != nil {
		t.Fatalf("GetRun of a run made after the read-only open: %v", err)
	}
	if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: second, Name: "out", Chunks: [][]byte{[]byte("a")}}); err != nil {
		t.Fatal(err)
	}
	page, err := r.ReadStream(ctx, &world.ReadStreamParams{RunID: second, Name: "out"})
	if err != nil || len(page.Chunks) != 1 || string(page.Chunks[0].Data) != "a" {
		t.Fatalf("ReadStream: %+v, %v", page, err)
	}

	// Renew a lease until the writer has compacted the log (a new file
	// renamed over the path) a few times; the reader keeps up.
	s := w.s.kv.(*logStore)
	owner := strings.Repeat("o", 500)
	for i := 0; s.compactions.Load() < 2; i++ {
		if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: first, Owner: owner, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			if _, err := r.GetRun(ctx, &world.GetRunParams{RunID: first}); err != nil {
				t.Fatalf("GetRun during compaction: %v", err)
			}
		}
		if i > 100000 {
			t.Fatal("no compaction")
		}
	}
	waitFor(t, func() bool { return !compacting(s) })
	third := newRun(t, w, "wf")
	got, err := r.GetRun(ctx, &world.GetRunParams{RunID: third})
	if err != nil || got.WorkflowName != "wf" {
		t.Fatalf("GetRun after compaction: %+v, %v", got, err)
	}
	runs, err := r.ListRuns(ctx, &world.ListRunsParams{})
	if err != nil || len(runs.Items) != 3 {
		t.Fatalf("ListRuns: %d runs, %v; want 3", len(runs.Items), err)
	}

	err = r.WriteStream(ctx, &world.WriteStreamParams{RunID: second, Name: "out", Chunks: [][]byte{[]byte("b")}})
	wantErrIs(t, err, ErrReadOnly, "WriteStream on a read-only World")
}

// Config.ReadOnly refuses what it cannot read: no path, a missing file (a
// bbolt store: TestOpenBoltStoreRefused).
func TestReadOnlyRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"memory", Config{ReadOnly: true}, "needs a Path"},
		{"missing", Config{Path: filepath.Join(dir, "none.db"), ReadOnly: true}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, err := Open(tc.cfg)
			if err == nil {
				_ = w.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want %q in it", err, tc.want)
			}
		})
	}
}

// A reader racing a writer sees each run's events grow and never shrink,
// never fails, and ends with every event; small compactions happen along
// the way.
func TestReadOnlyConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "world.db")
	w := mustOpen(t, Config{Path: path, Sync: SyncNone, compactMin: 32 << 10})
	id := newRun(t, w, "wf")
	r := mustOpen(t, Config{Path: path, ReadOnly: true})
	count := func() int {
		n := 0
		for cursor := ""; ; {
			page, err := r.ListEvents(ctx, &world.ListEventsParams{RunID: id, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
			if err != nil {
				t.Fatalf("ListEvents: %v", err)
			}
			n += len(page.Items)
			if !page.HasMore {
				return n
			}
			cursor = page.Cursor
		}
	}
	const steps = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range steps {
			evs := []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: strings.Repeat("s", 100)})}
			if _, err := w.Append(ctx, &world.AppendParams{RunID: id, Events: evs}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	last := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		n := count()
		if n < last {
			t.Fatalf("events went from %d to %d", last, n)
		}
		last = n
	}
	if want := len(allEvents(t, w, id)); count() != want {
		t.Fatalf("reader sees %d events, writer %d", count(), want)
	}
}

// A read-only World reads a store a crash left with an incomplete last
// record only while a process holds the store (the record may be one being
// written): it reports it (TornTail) and reads everything before it. With
// no process holding the store it refuses it, as Open with the lock does;
// a closed store cut short is refused too, never served as it is.
func TestReadOnlyTornTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	closed, crashed, runs, _ := logWorlds(t)
	whole := mustOpen(t, Config{Path: closed, ReadOnly: true})
	if err := whole.TornTail(); err != nil {
		t.Fatalf("TornTail of a whole store: %v", err)
	}
	_ = whole.Close()
	holder := mustOpen(t, Config{Path: copyFile(t, closed)})
	if err := holder.TornTail(); err != nil {
		t.Fatalf("TornTail of the World holding the lock: %v", err)
	}

	cut := copyFile(t, closed)
	fi, err := os.Stat(cut)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cut, fi.Size()-1); err != nil {
		t.Fatal(err)
	}
	err = wantOpenRefused(t, cut, ErrCorrupt, Config{ReadOnly: true})
	if errors.Is(err, ErrTornTail) || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("read-only Open of a store cut short: %v", err)
	}

	_, recs := commitRecords(t, crashed)
	last := recs[len(recs)-1]
	torn := copyFile(t, crashed)
	b, _ := os.ReadFile(torn)
	clear(b[(last.off+last.end)/2 : last.end])
	if err := os.WriteFile(torn, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if exclusiveLocks {
		wantOpenRefused(t, torn, ErrTornTail, Config{ReadOnly: true})
	}
	f, err := os.OpenFile(torn, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockExclusive(f, time.Second); err != nil { // as a writer holds it
		t.Fatal(err)
	}
	r := mustOpen(t, Config{Path: torn, ReadOnly: true})
	wantErrIs(t, r.TornTail(), ErrTornTail, "TornTail of a store held by a writer")
	if _, err := r.GetRun(ctx, &world.GetRunParams{RunID: runs[0]}); err != nil {
		t.Fatalf("GetRun of a run before the torn record: %v", err)
	}
}
