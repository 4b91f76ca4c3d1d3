package client_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// runLocal runs defs on an in-memory local world and returns a c and a
// function that stops everything.
func runLocal(defs ...workflow.Definition) (*client.Client, func()) {
	w, err := localworld.Open(localworld.Config{}) // "" path: in memory
	if err != nil {
		panic(err)
	}
	reg := workflow.NewRegistry()
	if err := reg.Register(defs...); err != nil {
		panic(err)
	}
	wk, err := worker.New(worker.Config{World: w, Registry: reg})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	return wk.Client(), func() { cancel(); <-done; _ = w.Close() }
}

type Order struct {
	ID    string
	Items []string
	Total int
}

type Receipt struct{ Charged int }

type Approval struct {
	OK bool
	By string
}

func ExampleWithIdempotencyKey() {
	c, stop := runLocal(fulfilOrder, chargeCard, printLabel)
	defer stop()
	ctx := context.Background()

	order := Order{ID: "43", Items: []string{"mug"}, Total: 12}
	first, _ := fulfilOrder.Start(ctx, c, order, client.WithIdempotencyKey("order-43"))
	again, _ := fulfilOrder.Start(ctx, c, order, client.WithIdempotencyKey("order-43"))
	fmt.Println("same run:", first.ID() == again.ID())
	// Output: same run: true
}

var progress = workflow.NewStep("progress", func(ctx context.Context, n int) (struct{}, error) {
	w := workflow.Writer(ctx, "progress")
	for i := 1; i <= n; i++ {
		if err := w.WriteJSON(map[string]int{"done": i, "of": n}); err != nil {
			return struct{}{}, err
		}
	}
	_, err := w.Write([]byte("finished"))
	return struct{}{}, err
})

var reporting = workflow.New("reporting", func(ctx workflow.Context, n int) (int, error) {
	_, err := progress.Call(ctx, n)
	return n, err
})

func ExampleClient_ReadStream() {
	c, stop := runLocal(reporting, progress)
	defer stop()
	ctx := context.Background()

	run, _ := reporting.Start(ctx, c, 2)
	// Reads live; ends when the stream closes (at the latest, with the run).
	for chunk, err := range c.ReadStream(ctx, run.ID(), client.StreamOptions{Namespace: "progress"}) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%d json=%v %s\n", chunk.Index, chunk.JSON, chunk.Data)
	}
	// Output:
	// 0 json=true {"done":1,"of":2}
	// 1 json=true {"done":2,"of":2}
	// 2 json=false finished
}

var chargeCard = workflow.NewStep("charge-card", func(ctx context.Context, o Order) (Receipt, error) {
	return Receipt{Charged: o.Total}, nil
})

var printLabel = workflow.NewStep("print-label", func(ctx context.Context, item string) (string, error) {
	return "label:" + item, nil
})

var fulfilOrder = workflow.New("fulfil-order", func(ctx workflow.Context, o Order) (string, error) {
	r, err := chargeCard.Call(ctx, o)
	if err != nil {
		return "", err
	}
	labels := make([]workflow.Future[string], len(o.Items))
	for i, item := range o.Items {
		labels[i] = printLabel.Go(ctx, item)
	}
	ls, err := workflow.All(ctx, labels...)
	if err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	return fmt.Sprintf("order %s: charged %d, %s", o.ID, r.Charged, strings.Join(ls, " ")), nil
})
