// Package example is the workflow the package example analyzes.
package example

import (
	"context"
	"time"

	"github.com/skeinflow/skein/workflow"
)

// stamp is a step: it may read the clock.
var stamp = workflow.NewStep("stamp", func(ctx context.Context, id string) (string, error) {
	return id + "@" + time.Now().Format(time.RFC3339), nil
})

// Order is a workflow with two findings and a suppressed line.
var Order = workflow.New("order", func(ctx workflow.Context, items map[string]int) (string, error) {
	deadline := time.Now().Add(time.Hour)
	last := ""
	for sku := range items {
		s, err := stamp.Call(ctx, sku)
		if err != nil {
			return "", err
		}
		last = s
	}
	//skein:nondeterministic-ok only logged
	ctx.Logger().Info("done", "late", time.Now().After(deadline))
	return last, nil
})
