package workflow_test

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

var invoice = workflow.NewStep("invoice", func(ctx context.Context, order string) (string, error) {
	return "inv-" + order, nil
})

// settle completes with the invoice's number; its cleanup hook then runs
// with the run's input, its result and the last step's result.
var settle = workflow.New("settle", func(ctx workflow.Context, order string) (string, error) {
	inv, err := invoice.Call(ctx, order)
	return "settled " + inv, err
}).WithCleanup(func(ctx context.Context, c *workflow.Cleanup[string, string]) error {
	var last string
	if err := c.DecodePrevious(&last); err != nil {
		return err
	}
	// Delete or archive what the run no longer needs; idempotently, since
	// the hook may run again after a crash.
	fmt.Printf("cleanup of order %s: result %q, last step %q\n", c.Input, c.Result, last)
	return nil
})

// A cleanup hook runs once a run has completed, before Result returns.
func ExampleWorkflow_WithCleanup() {
	w, _ := localworld.Open(localworld.Config{})
	defer w.Close()
	wk, stop := serve(w, worker.Config{}, settle, invoice)
	defer stop()
	ctx := context.Background()

	run, _ := settle.Start(ctx, wk.Client(), "A-7")
	out, err := run.Result(ctx) // after the hook's outcome is recorded
	fmt.Println(out, err)
	info, _ := run.Info(ctx)
	fmt.Println("cleanup", info.Cleanup)
	// Output:
	// cleanup of order A-7: result "settled inv-A-7", last step "inv-A-7"
	// settled inv-A-7 <nil>
	// cleanup done
}
