package peers

import (
	"context"
	"testing"
	"time"
)

// Run with: go test -run '^$' -bench . -benchtime 5x -count 1
// (see README.md). Each benchmark has one sub-benchmark per engine in
// Engines(), e.g. BenchmarkSeq1000/dbos-sqlite-full.

func BenchmarkSeq10(b *testing.B)        { Bench(b, SeqScenario(10)) }
func BenchmarkSeq100(b *testing.B)       { Bench(b, SeqScenario(100)) }
func BenchmarkSeq1000(b *testing.B)      { Bench(b, SeqScenario(1000)) }
func BenchmarkFanout10(b *testing.B)     { Bench(b, FanoutScenario(10)) }
func BenchmarkFanout100(b *testing.B)    { Bench(b, FanoutScenario(100)) }
func BenchmarkSleepWake1s(b *testing.B)  { Bench(b, SleepWakeScenario(time.Second)) }
func BenchmarkDBOSURLCheck(b *testing.B) { benchDBOSURL(b) }

// benchDBOSURL runs Seq1000 on DBOS opening SQLite from its own "sqlite:" URL,
// beside the handle built for dbos-sqlite-normal, to show the two agree.
func benchDBOSURL(b *testing.B) {
	for _, e := range []Engine{DBOSEngine(SQLiteURL), DBOSEngine(SQLiteNormal)} {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			r, err := e.Open(ctx, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			if err := r.Seq(ctx, 1, nil); err != nil {
				b.Fatal(err)
			}
			SeqScenario(1000).Run(b, r)
		})
	}
}

// TestEngines runs every scenario shape once, small, on every engine.
func TestEngines(t *testing.T) {
	ctx := context.Background()
	for _, e := range append(Engines(), DBOSEngine(SQLiteURL)) {
		t.Run(e.Name, func(t *testing.T) {
			r, err := e.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := r.Close(); err != nil {
					t.Error(err)
				}
			}()
			stamps := make([]time.Time, 30)
			if err := r.Seq(ctx, len(stamps), stamps); err != nil {
				t.Fatal(err)
			}
			for i, s := range stamps {
				if s.IsZero() || (i > 0 && s.Before(stamps[i-1])) {
					t.Fatalf("stamp %d = %v after %v", i, s, stamps[max(i-1, 0)])
				}
			}
			if err := r.Seq(ctx, 5, nil); err != nil {
				t.Fatal(err)
			}
			if err := r.Fanout(ctx, 20); err != nil {
				t.Fatal(err)
			}
			late, err := r.SleepWake(ctx, 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if late < -2*time.Millisecond || late > time.Second {
				t.Fatalf("sleep lateness %v", late)
			}
			t.Logf("50ms sleep woke %v late", late)
		})
	}
}

// TestDBOSSynchronous checks that every connection DBOS can use has the
// configured synchronous level and the WAL journal, after DBOS launched and
// ran workflows (DBOS itself runs PRAGMAs on its own handles only).
func TestDBOSSynchronous(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		mode DBOSMode
		want int
	}{{SQLiteFull, 2}, {SQLiteNormal, 1}} {
		t.Run(c.mode.String(), func(t *testing.T) {
			r, err := DBOSEngine(c.mode).Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.Fanout(ctx, 20); err != nil {
				t.Fatal(err)
			}
			levels, journal, err := DBOSSynchronous(ctx, r, 8)
			if err != nil {
				t.Fatal(err)
			}
			for i := range levels {
				if levels[i] != c.want || journal[i] != "wal" {
					t.Errorf("connection %d: synchronous=%d journal_mode=%s, want %d wal", i, levels[i], journal[i], c.want)
				}
			}
		})
	}
}
