package peers

import (
	"context"
	"io/fs"
	"math"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// BenchmarkFootprint10000 measures what one 10,000-step serial run leaves
// behind on each engine, side by side in one process run. Each iteration
// opens the engine on two fresh directories:
//
//   - a baseline: open, the one-step warm-up run, close; its files' size;
//   - the run: open, the warm-up, then (store still open) runtime.GC and
//     HeapAlloc, one 10,000-step Seq, runtime.GC and HeapAlloc again, the
//     files' size while open, close, the files' size.
//
// Metrics, per step of the run:
//
//   - store-B/step: the size of the store's files after Close, minus the
//     baseline's (Skein: the log file, its space allocated ahead trimmed;
//     DBOS: the SQLite database, whose WAL SQLite checkpoints into it and
//     deletes when the last connection closes); absent in memory;
//   - open-B/step: the files' growth while the store is open (Skein: the
//     log and the space allocated ahead of it; DBOS: database, WAL and
//     shared-memory index);
//   - heap-B/step: the growth of the live heap (HeapAlloc after a GC, see
//     liveHeap) over the run, with the store still open: what the process
//     keeps of a finished run (the store, and anything the engine holds).
//
// Run with (about 1 minute on 2 cores):
//
//	go test -run '^$' -bench Footprint -benchtime 1x -count 3
func BenchmarkFootprint10000(b *testing.B) {
	const n = 10_000
	for _, e := range Engines() {
		b.Run(e.Name, func(b *testing.B) {
			for b.Loop() {
				footprint(b, e, n)
			}
		})
	}
}

// footprint runs one n-step serial run on a fresh instance of e and
// reports its store and heap per step.
func footprint(b *testing.B, e Engine, n int) {
	ctx := context.Background()
	base := b.TempDir()
	r, err := e.Open(ctx, base)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Seq(ctx, 1, nil); err != nil {
		b.Fatal(err)
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	baseSize := dirSize(b, base)

	dir := b.TempDir()
	if r, err = e.Open(ctx, dir); err != nil {
		b.Fatal(err)
	}
	if err := r.Seq(ctx, 1, nil); err != nil {
		b.Fatal(err)
	}
	heap0, open0 := liveHeap(), dirSize(b, dir)
	if err := r.Seq(ctx, n, nil); err != nil {
		b.Fatal(err)
	}
	heap1, open1 := liveHeap(), dirSize(b, dir)
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	size := dirSize(b, dir)
	perStep := func(d int64) float64 { return float64(d) / float64(n) }
	if size > 0 {
		b.ReportMetric(perStep(size-baseSize), "store-B/step")
		b.ReportMetric(perStep(open1-open0), "open-B/step")
	}
	b.ReportMetric(perStep(int64(heap1)-int64(heap0)), "heap-B/step")
}

// liveHeap is HeapAlloc after a full collection, the least of ten taken
// 50ms apart: an engine may still be finishing the run when its result is
// in (acknowledging the message, dropping the invocation's state), and what
// it holds then is not what it keeps.
func liveHeap() uint64 {
	least := uint64(math.MaxUint64)
	for i := range 10 {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		least = min(least, ms.HeapAlloc)
	}
	return least
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(b *testing.B, dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			total += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}
