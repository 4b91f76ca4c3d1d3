package workflow_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/workflow"
)

var refund = workflow.NewStep("refund", func(ctx context.Context, c workflow.Compensation[int, string]) (struct{}, error) {
	fmt.Printf("refund %s (%d)\n", c.Result, c.Input)
	return struct{}{}, nil
})

var release = workflow.NewStep("release-stock", func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
	fmt.Println("release", c.Result)
	return struct{}{}, nil
})

// charge and reserve each declare their undo; ship fails.
var (
	charge  = workflow.WithCompensation(workflow.NewStep("charge", func(ctx context.Context, cents int) (string, error) { return "payment-1", nil }), refund)
	reserve = workflow.WithCompensation(workflow.NewStep("reserve", func(ctx context.Context, sku string) (string, error) { return "hold-" + sku, nil }), release)
	ship    = workflow.NewStep("ship", func(ctx context.Context, sku string) (string, error) {
		return "", workflow.Fatal(errors.New("no courier"))
	})
)

var checkout = workflow.New("checkout", func(ctx workflow.Context, sku string) (string, error) {
	if _, err := charge.Call(ctx, 1250); err != nil {
		return "", err
	}
	if _, err := reserve.Call(ctx, sku); err != nil {
		return "", workflow.Compensate(ctx)
	}
	if _, err := ship.Call(ctx, sku); err != nil {
		// Undo what completed, most recent first, then carry on.
		if cerr := workflow.Compensate(ctx); cerr != nil {
			return "", cerr
		}
		return "cancelled: " + err.Error(), nil
	}
	return "shipped", nil
})

// A saga: when shipping fails, the workflow compensates the steps that
// completed (the reservation, then the charge) and returns a result.
func ExampleWithCompensation() {
	client, stop := runLocal(refund, release, charge, reserve, ship, checkout)
	defer stop()
	ctx := context.Background()
	run, _ := checkout.Start(ctx, client, "sku-9")
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output:
	// release hold-sku-9
	// refund payment-1 (1250)
	// cancelled: step "ship" failed (attempt 1): no courier <nil>
}
