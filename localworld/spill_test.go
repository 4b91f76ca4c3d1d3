package localworld

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/skeinflow/skein/world"
)

// memoryValues counts the items of the buckets that go to disk by where
// their values are, and the bytes of those kept in memory that could go.
func memoryValues(s *logStore) (onDisk, inMemory int, memBytes int64) {
	s.mem.mu.RLock()
	defer s.mem.mu.RUnlock()
	for b, t := range s.mem.buckets {
		t.Ascend(func(it memItem) bool {
			switch {
			case it.onDisk():
				onDisk++
			case goesToDisk(bucketID(b), len(it.val())):
				inMemory++
				memBytes += int64(len(it.val()))
			}
			return true
		})
	}
	return onDisk, inMemory, memBytes
}

// writeSteps appends n steps (created, started, completed) to a new run.
func writeSteps(t *testing.T, w *World, n int) string {
	t.Helper()
	runID := newRun(t, w, "wf")
	for range n {
		step := testIDs.New(world.PrefixStep)
		mustAppend(t, w, runID, ev(step, &world.StepCreated{StepName: "a step"}), ev(step, &world.StepStarted{}),
			ev(step, &world.StepCompleted{Result: []byte(`"` + strings.Repeat("r", 100) + `"`)}))
	}
	return runID
}

// TestValuesGoToDiskPastTheWindow: a log store keeps in memory only the
// newest window's worth of the values that go to disk, reads the rest from
// the file, and Open keeps none.
func TestValuesGoToDiskPastTheWindow(t *testing.T) {
	t.Parallel()
	const window = 8 << 10
	cfg := Config{Path: filepath.Join(t.TempDir(), "world.db"), spillWindow: window}
	w := mustOpen(t, cfg)
	s := w.s.kv.(*logStore)
	runID := writeSteps(t, w, 200)
	onDisk, inMemory, memBytes := memoryValues(s)
	t.Logf("on disk %d, in memory %d (%d bytes)", onDisk, inMemory, memBytes)
	// A commit's values (a step's item, three events, the run) stay
	// until a window's worth of newer ones follows them.
	if onDisk < 500 || memBytes > window+2<<10 {
		t.Fatalf("%d values on disk, %d bytes in memory: want most on disk and at most the window (%d) and a commit in memory", onDisk, memBytes, window)
	}
	want := dumpKV(t, s)
	events := allEvents(t, w, runID)
	if len(events) != 2+3*200 {
		t.Fatalf("%d events read back, want %d", len(events), 2+3*200)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	w = mustOpen(t, cfg)
	s = w.s.kv.(*logStore)
	if _, inMemory, _ := memoryValues(s); inMemory != 0 {
		t.Fatalf("%d values that go to disk kept in memory after Open", inMemory)
	}
	if got := dumpKV(t, s); !maps.Equal(got, want) {
		t.Fatal("the store read back after Open differs")
	}
}

// flipValue flips a byte in the middle of the value on disk under key k of
// bucket b, in the file the store reads it from.
func flipValue(t *testing.T, s *logStore, b bucketID, k []byte) {
	t.Helper()
	s.mem.mu.RLock()
	it, ok := s.mem.buckets[b].Get(keyItem(k))
	s.mem.mu.RUnlock()
	if !ok || !it.onDisk() {
		t.Fatalf("bucket %s, key %q: no value on disk", b, k)
	}
	f, err := os.OpenFile(s.file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref := it.ref()
	at := ref.off + int64(ref.n)/2
	one := make([]byte, 1)
	if _, err := f.ReadAt(one, at); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0x10
	if _, err := f.WriteAt(one, at); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedValueOnDiskIsCorrupt: a value read back from the file that
// changed since it was written is ErrCorrupt (and world.ErrCorrupt), never
// other data, whichever read finds it; other runs read on.
func TestDamagedValueOnDiskIsCorrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := mustOpen(t, Config{Path: filepath.Join(t.TempDir(), "world.db"), spillWindow: 1})
	s := w.s.kv.(*logStore)
	damaged := writeSteps(t, w, 3)
	intact := writeSteps(t, w, 3)

	flipValue(t, s, bEvents, eventKey(damaged, 4))
	_, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: damaged})
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), "bucket events") {
		t.Fatalf("ListEvents of a damaged event: %v, want ErrCorrupt naming the bucket", err)
	}
	if evs := allEvents(t, w, intact); len(evs) != 11 {
		t.Fatalf("the intact run reads %d events, want 11", len(evs))
	}

	flipValue(t, s, bRuns, runKey(damaged))
	if _, err := w.GetRun(ctx, &world.GetRunParams{RunID: damaged}); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("GetRun of a damaged run: %v, want world.ErrCorrupt", err)
	}
	// A commit reads the run first: refused, nothing written.
	step := testIDs.New(world.PrefixStep)
	_, err = w.Append(ctx, &world.AppendParams{RunID: damaged, Events: []world.EventInput{ev(step, &world.StepCreated{StepName: "s"})}})
	if !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("Append to a damaged run: %v, want world.ErrCorrupt", err)
	}
	if _, err := w.GetRun(ctx, &world.GetRunParams{RunID: intact}); err != nil {
		t.Fatalf("GetRun of the intact run: %v", err)
	}
}

// TestCompactionMovesValuesOnDisk: a compaction of a store whose values are
// on disk copies them, checked, to the new file and reads them from there.
func TestCompactionMovesValuesOnDisk(t *testing.T) {
	t.Parallel()
	cfg := Config{Path: filepath.Join(t.TempDir(), "world.db"), Sync: SyncBatch, compactMin: 32 << 10, spillWindow: 1}
	w := mustOpen(t, cfg)
	s := w.s.kv.(*logStore)
	ctx := context.Background()
	var runs []string
	for range 8 {
		runs = append(runs, writeSteps(t, w, 20))
		// Lease renewals grow the log, not the live data.
		for range 100 {
			if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: runs[0], Owner: strings.Repeat("o", 300), TTL: 1 << 40}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, func() bool { return s.compactions.Load() >= 1 && !compacting(s) })
	s.mem.mu.RLock()
	sameFile := s.mem.disk == s.f
	s.mem.mu.RUnlock()
	if !sameFile {
		t.Fatal("after the compaction, values are read from another file than the store's")
	}
	if onDisk, _, _ := memoryValues(s); onDisk == 0 {
		t.Fatal("no value on disk after the compaction")
	}
	want := dumpKV(t, s)
	for _, id := range runs {
		if evs := allEvents(t, w, id); len(evs) != 2+3*20 {
			t.Fatalf("run %s reads %d events after the compaction, want %d", id, len(evs), 2+3*20)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = mustOpen(t, cfg)
	got := dumpKV(t, w.s.kv)
	for k := range want {
		if strings.HasPrefix(k, bLeases.String()+"/") {
			delete(want, k) // Open expires the leases
			delete(got, k)
		}
	}
	if !maps.Equal(got, want) {
		t.Fatal("the store read back after Open differs from the compacted one")
	}
}

// TestSpillQueue: the queue counts each value with its entry, takes back
// a failed commit's, and gives up the oldest past the window.
func TestSpillQueue(t *testing.T) {
	t.Parallel()
	var q spillQueue
	v := func(n int) []byte { return make([]byte, n) }
	entry := int64(unsafe.Sizeof(spilled{}))
	q.push(spilled{v: v(100), off: 1})
	q.push(spilled{v: v(100), off: 2})
	mark := len(q.q)
	q.push(spilled{v: v(50), off: 3})
	q.drop(mark) // a commit that failed
	if q.bytes != 200+2*entry || len(q.q) != 2 {
		t.Fatalf("after drop: %d bytes, %d entries; want %d, 2", q.bytes, len(q.q), 200+2*entry)
	}
	q.push(spilled{v: v(50), off: 4})
	var got []int64
	for {
		e, ok := q.pop(120 + entry)
		if !ok {
			break
		}
		got = append(got, e.off)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 || q.bytes != 50+entry {
		t.Fatalf("popped %v leaving %d bytes; want [1 2] leaving %d", got, q.bytes, 50+entry)
	}
}

// TestDamageFoundStopsWrites: once a read or a compaction finds a value
// on disk damaged, the file would not open again, so the store takes no
// more writes (what it took would be lost with it): every Append is
// ErrCorrupt saying so and naming the store's file, not the temporary
// one a compaction renamed over it; reads of intact data go on.
func TestDamageFoundStopsWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	appendTo := func(w *World, runID string) error {
		_, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
			ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: "s"})}})
		return err
	}
	refused := func(t *testing.T, w *World, path, runID string) {
		t.Helper()
		err := appendTo(w, runID)
		if !errors.Is(err, ErrCorrupt) || !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), "takes no more writes") ||
			!strings.Contains(err.Error(), path) || strings.Contains(err.Error(), compactSuffix) {
			t.Fatalf("Append to an intact run of a damaged store: %v, want ErrCorrupt refusing writes, naming %s", err, path)
		}
		if evs := allEvents(t, w, runID); len(evs) == 0 {
			t.Fatal("the intact run reads no events")
		}
	}
	t.Run("found by a read", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "world.db")
		cfg := Config{Path: path, Sync: SyncBatch, compactMin: 32 << 10, spillWindow: 1}
		w := mustOpen(t, cfg)
		s := w.s.kv.(*logStore)
		damaged, intact := writeSteps(t, w, 3), writeSteps(t, w, 3)
		for range 200 { // a compaction: values then read from a renamed file
			if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: intact, Owner: strings.Repeat("o", 300), TTL: 1 << 40}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, func() bool { return s.compactions.Load() >= 1 && !compacting(s) })
		if err := appendTo(w, intact); err != nil {
			t.Fatal(err)
		}
		flipValue(t, s, bEvents, eventKey(damaged, 4))
		if _, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: damaged}); !errors.Is(err, ErrCorrupt) ||
			!strings.Contains(err.Error(), path) || strings.Contains(err.Error(), compactSuffix) {
			t.Fatalf("ListEvents of a damaged event: %v, want ErrCorrupt naming %s", err, path)
		}
		refused(t, w, path, intact)
	})
	t.Run("found by a compaction", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "world.db")
		w := mustOpen(t, Config{Path: path, Sync: SyncBatch, compactMin: 32 << 10, spillWindow: 1, Logger: slog.New(slog.DiscardHandler)})
		s := w.s.kv.(*logStore)
		damaged, intact := writeSteps(t, w, 3), writeSteps(t, w, 3)
		flipValue(t, s, bEvents, eventKey(damaged, 4))
		for range 200 {
			_, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: intact, Owner: strings.Repeat("o", 300), TTL: 1 << 40})
			if err != nil {
				break // refused once the compaction found the damage
			}
		}
		waitFor(t, func() bool { return s.mem.damage.Load() != nil && !compacting(s) })
		refused(t, w, path, intact)
	})
}
