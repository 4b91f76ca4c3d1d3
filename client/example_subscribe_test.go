package client_test

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/world"
)

// Following a run as it commits: its log from the first event, then the
// events as they happen, until the run ends.
func ExampleClient_Subscribe() {
	c, stop := runLocal(fulfilOrder, chargeCard, printLabel)
	defer stop()
	ctx := context.Background()

	run, err := fulfilOrder.Start(ctx, c, Order{ID: "7", Items: []string{"mug", "cap"}, Total: 12})
	if err != nil {
		panic(err)
	}
	sub, err := c.Subscribe(ctx, client.SubscribeOptions{
		RunID: run.ID(),
		Types: []world.EventType{world.EventStepCompleted, world.EventWaitCompleted, world.EventRunCompleted},
	})
	if err != nil {
		panic(err)
	}
	defer sub.Close()
	for u, err := range sub.All() {
		if err != nil {
			panic(err)
		}
		fmt.Println(u.Event.Seq > 0, u.Event.Type())
	}
	// Output:
	// true step_completed
	// true step_completed
	// true step_completed
	// true wait_completed
	// true run_completed
}
