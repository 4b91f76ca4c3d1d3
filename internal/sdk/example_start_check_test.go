package sdk_test

import (
	"context"
	"errors"
	"fmt"

	workflow "github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

type paybackRequest struct {
	Order string `json:"order"`
	Cents int    `json:"cents"`
}

var paybackFlow = workflow.New("payback", func(ctx workflow.Context, r paybackRequest) (int, error) { return r.Cents, nil })

// A client given the Registry checks an input started by name before it
// creates the run, and an idempotency key names one start: the same key
// with the same input is the first run, with another input a conflict.
func ExampleRequestError() {
	w, _ := localworld.Open(localworld.Config{})
	defer w.Close()
	client, _ := workflow.NewClient(workflow.ClientConfig{World: w, Registry: workflow.NewRegistry().MustRegister(paybackFlow)})
	ctx := context.Background()

	_, err := client.Start(ctx, "payback", "forty-two")
	fmt.Println("a string for a struct:", errors.Is(err, world.ErrInvalid))

	key := workflow.WithIdempotencyKey("payback-1001")
	first, _ := paybackFlow.Start(ctx, client, paybackRequest{Order: "1001", Cents: 500}, key)
	again, _ := paybackFlow.Start(ctx, client, paybackRequest{Order: "1001", Cents: 500}, key)
	fmt.Println("same input, same run:", again.ID() == first.ID(), again.Existed())

	_, err = paybackFlow.Start(ctx, client, paybackRequest{Order: "1001", Cents: 900}, key)
	var conflict *workflow.RequestError
	fmt.Println("another input:", errors.As(err, &conflict) && conflict.RunID == first.ID() && conflict.InputDiffers, errors.Is(err, world.ErrConflict))
	// Output:
	// a string for a struct: true
	// same input, same run: true true
	// another input: true true
}

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
