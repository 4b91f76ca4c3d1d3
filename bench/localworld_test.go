package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// BenchmarkLocalworldAppend measures Append commits per second on the
// embedded World: in memory and on a file with each sync policy, for
// one-event commits (a step_created) and three-event commits (a step created,
// started and completed: the shape of a serial step), from one goroutine and
// from eight appending to different runs (where group commit can share an
// fsync). It reports appends/s (commits), events/s and the p50/p99 latency of
// one Append.
func BenchmarkLocalworldAppend(b *testing.B) {
	stores := []struct {
		name string
		cfg  func(b *testing.B) localworld.Config
	}{
		{"memory", func(*testing.B) localworld.Config { return localworld.Config{} }},
		{"log-every-commit", lwFileConfig(localworld.SyncEveryCommit)},
		{"log-batch", lwFileConfig(localworld.SyncBatch)},
		{"log-none", lwFileConfig(localworld.SyncNone)},
	}
	for _, s := range stores {
		for _, events := range []int{1, 3} {
			for _, workers := range []int{1, 8} {
				name := fmt.Sprintf("%s/events=%d/appenders=%d", s.name, events, workers)
				b.Run(name, func(b *testing.B) {
					lwBenchAppend(b, s.cfg(b), events, workers)
				})
			}
		}
	}
}

func lwFileConfig(p localworld.SyncPolicy) func(b *testing.B) localworld.Config {
	return func(b *testing.B) localworld.Config {
		return localworld.Config{Path: filepath.Join(b.TempDir(), "bench.db"), Sync: p}
	}
}

var lwIDs = world.NewIDSource(nil, nil)

func lwBenchAppend(b *testing.B, cfg localworld.Config, events, workers int) {
	ctx := context.Background()
	w, err := localworld.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	runs := make([]string, workers)
	for i := range runs {
		runs[i] = lwIDs.New(world.PrefixRun)
		_, err := w.Append(ctx, &world.AppendParams{RunID: runs[i], Events: []world.EventInput{
			{Data: &world.RunCreated{WorkflowName: "bench", Input: json.RawMessage(`{"order":42}`)}},
			{Data: &world.RunStarted{}},
		}})
		if err != nil {
			b.Fatal(err)
		}
	}
	input := json.RawMessage(`{"item":"widget","qty":3}`)
	result := json.RawMessage(`{"ok":true,"receipt":"r-123"}`)
	commit := func(runID string) error {
		stepID := lwIDs.New(world.PrefixStep)
		evs := []world.EventInput{{CorrelationID: stepID, Data: &world.StepCreated{StepName: "charge", Input: input}}}
		if events == 3 {
			evs = append(evs,
				world.EventInput{CorrelationID: stepID, Data: &world.StepStarted{}},
				world.EventInput{CorrelationID: stepID, Data: &world.StepCompleted{Result: result}})
		}
		_, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: evs})
		return err
	}

	var next atomic.Int64
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := range workers {
		wg.Go(func() {
			own := make([]time.Duration, 0, b.N/workers+1)
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := commit(runs[g]); err != nil {
					b.Error(err)
					return
				}
				own = append(own, time.Since(t0))
			}
			lat[g] = own
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(b.N*events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
