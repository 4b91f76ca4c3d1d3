package localworld

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func TestLogCompaction(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "world.db")
	cfg := Config{Path: path, Sync: SyncBatch, compactMin: 64 << 10}
	w := mustOpen(t, cfg)
	s := w.s.kv.(*logStore)
	ctx := context.Background()

	// Four writers: events that stay (live data grows) and leases renewed
	// over and over (the log grows, the live data does not).
	counts := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			id := testIDs.New(world.PrefixRun)
			evs := []world.EventInput{ev("", &world.RunCreated{WorkflowName: "wf"}), ev("", &world.RunStarted{})}
			n := 0
			for i := range 400 {
				if i%4 == 0 {
					if _, err := w.Append(ctx, &world.AppendParams{RunID: id, Events: evs}); err != nil {
						t.Error(err)
						return
					}
					n += len(evs)
					evs = []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: strings.Repeat("x", 50)})}
				}
				if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: id, Owner: fmt.Sprint("owner-", g, "-", strings.Repeat("o", 200)), TTL: time.Hour}); err != nil {
					t.Error(err)
					return
				}
			}
			mu.Lock()
			counts[id] = n
			mu.Unlock()
		})
	}
	wg.Wait()
	waitFor(t, func() bool { return s.compactions.Load() >= 3 && !compacting(s) })
	s.mem.mu.Lock()
	end, live := s.end, s.live
	s.mem.mu.Unlock()
	t.Logf("%d compactions; log %d bytes, live %d bytes", s.compactions.Load(), end, live)
	if end > max(2*live, 64<<10)+64<<10 {
		t.Fatalf("log of %d bytes for %d live bytes after compacting", end, live)
	}
	checkRuns(t, w, counts)
	want := dumpKV(t, w.s.kv)

	_ = w.Close()
	if left := compactLeftovers(path); len(left) > 0 {
		t.Fatalf("compaction left %v", left)
	}
	if h, recs := commitRecords(t, path); h.snapRecords == 0 || h.firstSeq <= 1 {
		t.Fatalf("the file has no snapshot: header %+v, %d commit records", h, len(recs))
	}
	w = mustOpen(t, cfg)
	got := dumpKV(t, w.s.kv)
	// Open expires the leases (the previous owner is gone): same keys,
	// new values.
	for k := range want {
		if strings.HasPrefix(k, bLeases.String()+"/") {
			if _, ok := got[k]; !ok {
				t.Fatalf("lease %s lost", k)
			}
			delete(got, k)
			delete(want, k)
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("reopened after compaction: %d keys, want %d", len(got), len(want))
	}
	checkRuns(t, w, counts)
}

// Close during a compaction stops it and leaves a store that opens with
// everything, and no temporary file.
func TestLogCloseDuringCompaction(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "world.db")
	cfg := Config{Path: path, compactMin: 1 << 20}
	w := mustOpen(t, cfg)
	s := w.s.kv.(*logStore)
	ctx := context.Background()
	id := newRun(t, w, "wf")
	// Live data worth a few snapshot records, so a snapshot takes a while.
	for i := range 4 {
		chunk := bytes.Repeat([]byte{byte(i)}, 1<<20)
		if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: id, Name: "big", Chunks: [][]byte{chunk}}); err != nil {
			t.Fatal(err)
		}
	}
	owner := strings.Repeat("o", 4000)
	for !compacting(s) {
		if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: id, Owner: owner}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if left := compactLeftovers(path); len(left) > 0 {
		t.Fatalf("Close left %v", left)
	}
	t.Logf("%d compactions finished before Close", s.compactions.Load())
	w = mustOpen(t, cfg)
	checkRuns(t, w, map[string]int{id: 2})
	info, err := w.StreamInfo(ctx, &world.StreamInfoParams{RunID: id, Name: "big"})
	if err != nil || info.TailIndex != 3 {
		t.Fatalf("stream after reopen: %+v, %v", info, err)
	}
}

func compacting(s *logStore) bool {
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	return s.compacting
}

func TestLogRemovesCompactionLeftovers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "world.db")
	w := mustOpen(t, Config{Path: path})
	_ = w.Close()
	left := path + compactSuffix + "12345"
	if err := os.WriteFile(left, []byte("half a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(path), "other.db"+compactSuffix+"1")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = mustOpen(t, Config{Path: path})
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another store's file was removed: %v", err)
	}
}

// A store opened through a symbolic link is compacted in place of the
// link's target: the link stays a link, and both names see the new file.
func TestLogCompactionKeepsSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "data", "world.skein")
	if err := os.Mkdir(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.skein")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Path: link, Sync: SyncNone, compactMin: 16 << 10}
	w := mustOpen(t, cfg)
	s := w.s.kv.(*logStore)
	ctx := context.Background()
	id := testIDs.New(world.PrefixRun)
	if _, err := w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{ev("", &world.RunCreated{WorkflowName: "wf"})}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; s.compactions.Load() == 0; i++ {
		if i > 10000 {
			t.Fatal("no compaction after 10,000 lease renewals")
		}
		if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: id, Owner: strings.Repeat("o", 200), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return !compacting(s) })
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("compaction replaced the symbolic link %s with a %s", link, fi.Mode())
	}
	if h, _ := commitRecords(t, target); h.snapRecords == 0 || h.firstSeq <= 1 {
		t.Fatalf("the link's target holds no compacted log: header %+v", h)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+compactSuffix+"*")); len(left) > 0 {
		t.Fatalf("compaction left %v beside the link", left)
	}
	w = mustOpen(t, cfg)
	checkRuns(t, w, map[string]int{id: 1})
}
