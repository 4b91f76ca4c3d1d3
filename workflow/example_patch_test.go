package workflow_test

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/workflow"
)

var fraudCheck = workflow.NewStep("fraud-check", func(ctx context.Context, o Order) (bool, error) {
	return o.Total < 1000, nil
})

// A change guarded by a patch: runs that reach it after the deploy check
// for fraud before charging; runs that charged before the deploy replay
// the old path.
var chargeOrder = workflow.New("charge-order", func(ctx workflow.Context, o Order) (string, error) {
	if workflow.Patched(ctx, "add-fraud-check") {
		ok, err := fraudCheck.Call(ctx, o)
		if err != nil || !ok {
			return "refused", err
		}
	}
	r, err := chargeCard.Call(ctx, o)
	return fmt.Sprintf("charged %d", r.Charged), err
})

func ExamplePatched() {
	c, stop := runLocal(chargeOrder, chargeCard, fraudCheck)
	defer stop()
	ctx := context.Background()

	run, err := chargeOrder.Start(ctx, c, Order{ID: "43", Total: 5000})
	if err != nil {
		panic(err)
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Once no unfinished run lacks the patch's marker, the old path can go.
	rep, err := c.CheckPatch(ctx, &client.CheckPatchParams{WorkflowName: "charge-order", PatchID: "add-fraud-check"})
	fmt.Println(rep.Retirable(), err)
	// Output:
	// refused <nil>
	// true <nil>
}
