package client_test

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// tally stands for a step the workflow starts and never awaits (an audit
// write, a notification): it may still run after the run has completed.
var tally = workflow.NewStep("tally", func(ctx context.Context, n int) (int, error) { return n * 10, nil })

var quick = workflow.NewStep("quick", func(ctx context.Context, n int) (int, error) { return n + 1, nil })

var fireAndForget = workflow.New("fire-and-forget", func(ctx workflow.Context, n int) (int, error) {
	tally.Go(ctx, n) // started with quick, never awaited
	return quick.Call(ctx, n)
})

// Result returns as soon as the run's outcome is recorded; WaitDeactivated
// also waits for the steps the run left running to record their results.
func ExampleClient_WaitDeactivated() {
	w, _ := localworld.Open(localworld.Config{})
	defer w.Close()
	wk, stop := serve(w, worker.Config{}, fireAndForget, tally, quick)
	defer stop()
	ctx := context.Background()

	run, _ := fireAndForget.Start(ctx, wk.Client(), 4)
	out, err := run.Result(ctx)
	fmt.Println("result", out, err)
	info, err := wk.Client().WaitDeactivated(ctx, run.ID())
	fmt.Println(info.Status, "at rest:", !info.DeactivatedAt.IsZero(), err)
	// Output:
	// result 5 <nil>
	// completed at rest: true <nil>
}
