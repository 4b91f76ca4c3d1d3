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

var unbook = workflow.NewStep("unbook-room", func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
	fmt.Println("cancel booking", c.Result)
	return struct{}{}, nil
})

var (
	book = workflow.WithCompensation(workflow.NewStep("book-room", func(ctx context.Context, night string) (string, error) {
		return "room-" + night, nil
	}), unbook)
	pay = workflow.NewStep("pay", func(ctx context.Context, room string) (string, error) {
		return "", workflow.Fatal(errors.New("card declined"))
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
	c, stop := runLocal(refund, release, charge, reserve, ship, checkout)
	defer stop()
	ctx := context.Background()
	run, _ := checkout.Start(ctx, c, "sku-9")
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output:
	// release hold-sku-9
	// refund payment-1 (1250)
	// cancelled: step "ship" failed (attempt 1): no courier <nil>
}

// trip fails when the payment does: the booking is compensated after the
// run's end.
var trip = workflow.New("trip", func(ctx workflow.Context, night string) (string, error) {
	room, err := book.Call(ctx, night)
	if err != nil {
		return "", err
	}
	return pay.Call(ctx, room)
}).WithCompensateOnFailure()

// A workflow that compensates on failure: the run fails at once (Result
// returns the failure), then its completed steps are compensated, most
// recent first, before the run comes to rest.
func ExampleWorkflow_WithCompensateOnFailure() {
	c, stop := runLocal(unbook, book, pay, trip)
	defer stop()
	ctx := context.Background()
	run, _ := trip.Start(ctx, c, "fri")
	_, err := run.Result(ctx)                   // as soon as the failure is recorded
	info, _ := c.WaitDeactivated(ctx, run.ID()) // once the compensations have ended
	var failed *workflow.RunFailedError
	fmt.Println(info.Status, errors.As(err, &failed))
	comp := info.Compensations
	fmt.Println(comp.Status(), comp.Succeeded, comp.Failed)
	// Output:
	// cancel booking room-fri
	// failed true
	// compensated 1 0
}
