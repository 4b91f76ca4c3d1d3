package workflow_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// Register refuses a name another definition holds, or one the SDK keeps
// for itself, with a *RegistrationError.
func ExampleRegistrationError() {
	noop := func(context.Context, int) (int, error) { return 0, nil }
	err := workflow.NewRegistry().Register(workflow.NewStep("charge", noop), workflow.NewStep("charge", noop))
	var re *workflow.RegistrationError
	fmt.Println(errors.As(err, &re), re.Problem, errors.Is(err, world.ErrConflict))

	err = workflow.NewRegistry().Register(workflow.NewStep("skein.start-child", noop))
	fmt.Println(errors.As(err, &re), re.Problem, errors.Is(err, world.ErrInvalid))
	// Output:
	// true taken true
	// true reserved true
}
