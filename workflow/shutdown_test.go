package workflow_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// lateReceiver is a Consumer whose receives end only once the Worker has
// begun to stop, with a message: as an SQS long poll answered after its
// receiver was told to stop.
type lateReceiver struct {
	*localworld.World
	released chan world.ReleaseParams
}

func (c *lateReceiver) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	<-ctx.Done()
	return c.World.Receive(context.WithoutCancel(ctx), &world.ReceiveParams{Max: p.Max, Visibility: p.Visibility})
}

func (c *lateReceiver) Release(ctx context.Context, p *world.ReleaseParams) error {
	c.released <- *p
	return c.World.Release(ctx, p)
}

// TestWorkerGivesBackLateDeliveries: a message a receive brings after the
// Worker began to stop is not worked on but released at once (no delay,
// within the default 5m Visibility), for the next worker.
func TestWorkerGivesBackLateDeliveries(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	c := &lateReceiver{World: lw, released: make(chan world.ReleaseParams, 10)}
	var calls atomic.Int32
	wf := workflow.New("late", func(ctx workflow.Context, n int) (int, error) { calls.Add(1); return n, nil })
	reg := workflow.NewRegistry().MustRegister(wf)
	wk, err := workflow.NewWorker(workflow.WorkerConfig{World: lw, Consumer: c, Registry: reg, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	if _, err := wf.Start(context.Background(), wk.Client(), 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(c.released)
	var got []world.ReleaseParams
	for p := range c.released {
		got = append(got, p)
	}
	if len(got) != 1 || got[0].Delay != 0 {
		t.Fatalf("releases %+v, want one with no delay", got)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the workflow ran %d times after the Worker began to stop", n)
	}
	ds, err := lw.Receive(context.Background(), &world.ReceiveParams{Max: 10})
	if err != nil || len(ds) != 1 || ds[0].Attempt != 2 {
		t.Fatalf("after the stop: %d visible (%+v), %v; want the message, its second delivery", len(ds), ds, err)
	}
}
