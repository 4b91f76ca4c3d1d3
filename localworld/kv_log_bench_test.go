package localworld

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// BenchmarkLogAllocation compares the ways a log store can grow its file:
// allocating chunks ahead with fallocate, writing chunks of zeros ahead,
// or appending (the file grows at every commit). One-event and three-event
// Appends (about 1.1 and 2.8 KB records) from one goroutine, fdatasync
// each.
//
//	go test -run '^$' -bench LogAllocation -benchtime 3000x -count 3 ./localworld/
func BenchmarkLogAllocation(b *testing.B) {
	in := json.RawMessage(`{"item":"widget","qty":3}`)
	out := json.RawMessage(`{"ok":true,"receipt":"r-123"}`)
	for _, events := range []int{1, 3} {
		for _, c := range []struct {
			name  string
			alloc allocMode
		}{{"fallocate", allocFallocate}, {"zero-fill", allocZeroFill}, {"append", allocNone}} {
			b.Run(fmt.Sprintf("events=%d/%s", events, c.name), func(b *testing.B) {
				cfg := Config{Path: filepath.Join(b.TempDir(), "bench.db"), alloc: c.alloc}
				w, err := Open(cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				ctx := context.Background()
				runID := testIDs.New(world.PrefixRun)
				if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{ev("", &world.RunCreated{WorkflowName: "bench"}), ev("", &world.RunStarted{})}}); err != nil {
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					id := testIDs.New(world.PrefixStep)
					evs := []world.EventInput{ev(id, &world.StepCreated{StepName: "charge", Input: in})}
					if events == 3 {
						evs = append(evs, ev(id, &world.StepStarted{}), ev(id, &world.StepCompleted{Result: out}))
					}
					t0 := time.Now()
					if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: evs}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
			})
		}
	}
}
