package sdk_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// deliveryCounter counts the deliveries of each message, and the
// extensions of their visibility.
type deliveryCounter struct {
	*localworld.World
	mu      sync.Mutex
	n       map[string]int
	extends atomic.Int32
}

func (c *deliveryCounter) Extend(ctx context.Context, p *world.ExtendParams) error {
	err := c.World.Extend(ctx, p)
	if err == nil {
		c.extends.Add(1)
	}
	return err
}

func (c *deliveryCounter) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	ds, err := c.World.Receive(ctx, p)
	c.mu.Lock()
	for _, d := range ds {
		c.n[d.MessageID]++
	}
	c.mu.Unlock()
	return ds, err
}

func (c *deliveryCounter) most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 0
	for _, n := range c.n {
		m = max(m, n)
	}
	return m
}

// A message handled for longer than the Worker's Visibility (a long step)
// is not delivered again meanwhile: the Worker extends it while it works.
// The heartbeat runs on the wall clock, every third of Visibility: with
// Visibility 1.5s a redelivery takes a heartbeat late by a second, ten
// times what a busy machine delays it. The step lasts until the message
// has been extended four times (4/3 of Visibility), bounded by 20s: without
// the heartbeat the message comes back while it waits.
func TestWorkerKeepsALongMessageHidden(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	dc := &deliveryCounter{World: lw, n: map[string]int{}}
	var runs atomic.Int32
	long := sdk.NewStep("long", func(ctx context.Context, d time.Duration) (int, error) {
		runs.Add(1)
		bound := time.After(d)
		for dc.extends.Load() < 4 {
			select {
			case <-time.After(10 * time.Millisecond):
			case <-bound:
				return 1, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		return 1, nil
	})
	wf := sdk.New("patient", func(ctx sdk.Context, d time.Duration) (int, error) {
		return long.Call(ctx, d)
	})
	reg := sdk.NewRegistry().MustRegister(wf, long)
	w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Consumer: dc, Registry: reg, Concurrency: 4,
		Visibility: 1500 * time.Millisecond}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	run, err := wf.Start(ctx, w.Client(), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != 1 {
		t.Fatalf("result %d, %v", got, err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the step ran %d times, want 1", n)
	}
	if n := dc.most(); n != 1 {
		t.Errorf("a message was delivered %d times while its handler worked, want 1", n)
	}
	if n := dc.extends.Load(); n < 4 {
		t.Errorf("the message was extended %d times while its handler worked, want 4 or more", n)
	}
}

// leaseFaultWorld fails every run lease: each message fails, to be retried.
type leaseFaultWorld struct{ *localworld.World }

func (leaseFaultWorld) AcquireRunLease(context.Context, *world.RunLeaseParams) (*world.RunLease, error) {
	return nil, errors.New("throttled")
}

// A failed message's retry delay counts the deliveries of the messages it
// replaces (world.Message.Delivered): replacing a message that keeps
// failing keeps its backoff instead of starting it over.
func TestWorkerRetryDelayCountsReplacedDeliveries(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	attempts := make(chan int, 16)
	w, err := sdk.NewWorker(sdk.WorkerConfig{World: leaseFaultWorld{lw}, Consumer: lw, Registry: sdk.NewRegistry(), Concurrency: 1}, knobs.WithPollWait(20*time.Millisecond), knobs.WithRetryDelay(func(attempt int) time.Duration {
		select {
		case attempts <- attempt:
		default:
		}
		return time.Hour
	}))
	if err != nil {
		t.Fatal(err)
	}
	body, err := world.EncodeMessage(world.Message{RunID: world.NewIDSource(nil, nil).New(world.PrefixRun), Delivered: 5})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := lw.Enqueue(ctx, &world.EnqueueParams{Body: body}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case got := <-attempts:
		if got != 6 {
			t.Errorf("RetryDelay got attempt %d, want 6 (5 delivered before, and this one)", got)
		}
	case <-ctx.Done():
		t.Fatal("the message was not retried")
	}
}
