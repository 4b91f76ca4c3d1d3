package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

type paybackRequest struct {
	Order string `json:"order"`
	Cents int    `json:"cents"`
}

var paybackFlow = workflow.New("payback", func(ctx workflow.Context, r paybackRequest) (int, error) { return r.Cents, nil })

// A c given the Registry checks an input started by name before it
// creates the run, and an idempotency key names one start: the same key
// with the same input is the first run, with another input a conflict.
func ExampleRequestError() {
	w, _ := localworld.Open(localworld.Config{})
	defer w.Close()
	c, _ := client.New(client.Config{World: w, Registry: workflow.NewRegistry().MustRegister(paybackFlow)})
	ctx := context.Background()

	_, err := c.Start(ctx, "payback", "forty-two")
	fmt.Println("a string for a struct:", errors.Is(err, world.ErrInvalid))

	key := client.WithIdempotencyKey("payback-1001")
	first, _ := paybackFlow.Start(ctx, c, paybackRequest{Order: "1001", Cents: 500}, key)
	again, _ := paybackFlow.Start(ctx, c, paybackRequest{Order: "1001", Cents: 500}, key)
	fmt.Println("same input, same run:", again.ID() == first.ID(), again.Existed())

	_, err = paybackFlow.Start(ctx, c, paybackRequest{Order: "1001", Cents: 900}, key)
	var conflict *client.RequestError
	fmt.Println("another input:", errors.As(err, &conflict) && conflict.RunID == first.ID() && conflict.InputDiffers, errors.Is(err, world.ErrConflict))
	// Output:
	// a string for a struct: true
	// same input, same run: true true
	// another input: true true
}
