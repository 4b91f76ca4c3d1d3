package skeintest_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// BenchmarkCheckLog replays the history of a run that called 1000 steps
// one after the other and then fell asleep (about 3000 events).
func BenchmarkCheckLog(b *testing.B) {
	inc := workflow.NewStep("inc", func(_ context.Context, n int) (int, error) { return n + 1, nil })
	count := workflow.New("count", func(ctx workflow.Context, n int) (int, error) {
		v := 0
		for range n {
			var err error
			if v, err = inc.Call(ctx, v); err != nil {
				return 0, err
			}
		}
		return v, workflow.Sleep(ctx, time.Hour)
	})
	reg := workflow.NewRegistry().MustRegister(count, inc)
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	worker, err := worker.New(worker.Config{World: w, Registry: reg}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx) }()
	run, err := count.Start(ctx, worker.Client(), 1000)
	if err != nil {
		b.Fatal(err)
	}
	var events []world.Event
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if events, err = skeintest.ReadLog(ctx, w, run.ID()); err != nil {
			b.Fatal(err)
		}
		if events[len(events)-1].Type() == world.EventWaitCreated {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the run did not reach its sleep")
		}
	}
	cancel()
	<-done
	for b.Loop() {
		rep, err := sdk.CheckLog(reg, events)
		if err != nil || !rep.Compatible() {
			b.Fatal(rep, err)
		}
	}
	b.ReportMetric(float64(len(events)), "events")
}
