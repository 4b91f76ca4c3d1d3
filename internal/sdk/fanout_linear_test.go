package sdk_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
)

// All over a wide fan-out looks at its futures a bounded number of times
// per future, not once per future at every event the engine applies: a
// wait condition that scanned every future at each settlement made a
// fan-out of n steps cost O(n²) (about half the CPU of a 5,000-step
// fan-out). Counted, not timed: the looks at the futures' state per
// execution of the workflow (each replay looks at them all again).
func TestAllLooksLinear(t *testing.T) {
	t.Parallel()
	const n = 1000
	var looks, runs atomic.Int64
	work := sdk.NewStep("work", func(ctx context.Context, i int) (int, error) { return i, nil })
	fan := sdk.New("wide", func(ctx sdk.Context, n int) (int, error) {
		runs.Add(1)
		fs := make([]sdk.Future[int], n)
		for i := range fs {
			fs[i] = work.Go(ctx, i)
		}
		vs, err := sdk.All(ctx, sdk.CountLooks(fs, &looks)...)
		if err != nil {
			return 0, err
		}
		sum := 0
		for _, v := range vs {
			sum += v
		}
		return sum, nil
	})
	e := newEnvWith(t, envOptions{engine: sdk.EngineOptions{InlineConcurrency: 64}}, fan, work)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := fan.Start(ctx, e.client, n)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != n*(n-1)/2 {
		t.Fatalf("result %d, %v; want %d", got, err, n*(n-1)/2)
	}
	// A look per future as it settles, the failure scan after each
	// settlement that may fail one (none here), a first scan, and All's
	// reading of the values at the end: a few looks per future.
	per := float64(looks.Load()) / float64(n*runs.Load())
	t.Logf("%d looks over %d executions of the workflow: %.1f per future per execution", looks.Load(), runs.Load(), per)
	if per > 10 {
		t.Errorf("%.1f looks per future per execution of the workflow, want at most 10 (linear)", per)
	}
}
