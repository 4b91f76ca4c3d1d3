package workflow_test

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// tagOrder labels its run with the customer and its progress.
var tagOrder = workflow.New("tag-order", func(ctx workflow.Context, o Order) (Receipt, error) {
	if err := workflow.SetAttributes(ctx, map[string]string{"customer": "c-" + o.ID, "stage": "charging"}); err != nil {
		return Receipt{}, err
	}
	r, err := chargeCard.Call(ctx, o)
	if err != nil {
		return Receipt{}, err
	}
	return r, workflow.SetAttributes(ctx, map[string]string{"stage": "charged"})
})

func ExampleSetAttributes() {
	c, stop := runLocal(tagOrder, chargeCard)
	defer stop()
	ctx := context.Background()

	run, _ := tagOrder.Start(ctx, c, Order{ID: "44", Total: 9}, client.WithAttributes(map[string]string{"channel": "web"}))
	_, _ = run.Result(ctx)
	_ = c.SetAttributes(ctx, run.ID(), map[string]string{"reviewed-by": "dana"})

	page, _ := c.ListRuns(ctx, client.ListRunsOptions{Attribute: &world.AttributeFilter{Key: "customer", Value: "c-44"}})
	for _, r := range page.Runs {
		fmt.Println(r.WorkflowName, r.Attributes["stage"], r.Attributes["channel"], r.Attributes["reviewed-by"])
	}
	err := c.SetAttributes(ctx, run.ID(), map[string]string{"bad key": "x"})
	fmt.Println(err != nil)
	// Output:
	// tag-order charged web dana
	// true
}
