package skeinlambda_test

import (
	"context"
	"log"
	"strings"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/skeinlambda"
	"github.com/skeinflow/skein/workflow"
)

// Greet is a workflow with one step.
var (
	Shout = workflow.NewStep("shout", func(_ context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	})
	Greet = workflow.New("greet", func(ctx workflow.Context, name string) (string, error) {
		return Shout.Call(ctx, "hello, "+name)
	})
)

// A function's main: register the workflows and their steps, then serve
// them. The stack's template sets the environment Start reads.
func Example() {
	reg := workflow.NewRegistry()
	if err := reg.Register(Greet, Shout); err != nil {
		log.Fatal(err)
	}
	skeinlambda.Start(reg)
}

// Overriding one of the engine's defaults.
func ExampleStart_options() {
	reg := workflow.NewRegistry()
	if err := reg.Register(Greet, Shout); err != nil {
		log.Fatal(err)
	}
	skeinlambda.Start(reg,
		skeinlambda.WithHandlerConfig(func(cfg *handler.Config) {
			cfg.Worker.Engine.MaxDeliveries = 100
		}),
	)
}
