package sdk_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// lateReceiver is a Consumer whose receives end only once the Worker has
// begun to stop, with a message: as an SQS long poll answered after its
// receiver was told to stop.
type lateReceiver struct {
	*localworld.World
	released chan world.ReleaseParams
	entered  chan struct{} // closed when the first receive begins
	once     sync.Once
	late     atomic.Int32 // deliveries the late receives brought
}

func (c *lateReceiver) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	c.once.Do(func() { close(c.entered) })
	<-ctx.Done()
	ds, err := c.World.Receive(context.WithoutCancel(ctx), &world.ReceiveParams{Max: p.Max, Visibility: p.Visibility})
	c.late.Add(int32(len(ds)))
	return ds, err
}

func (c *lateReceiver) Release(ctx context.Context, p *world.ReleaseParams) error {
	c.released <- *p
	return c.World.Release(ctx, p)
}

// TestWorkerGivesBackLateDeliveries: a message a receive brings after the
// Worker began to stop is not worked on but given back at once (nothing
// waits for a Visibility), and that receive is not counted: the message
// comes back with the deliveries before it (here two, released by another
// receiver), so the next executor counts the same total as the receive
// the Worker gave back, not one more (EngineOptions.MaxDeliveries, a
// queue's dead-letter count).
func TestWorkerGivesBackLateDeliveries(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	c := &lateReceiver{World: lw, released: make(chan world.ReleaseParams, 10), entered: make(chan struct{})}
	var calls atomic.Int32
	wf := sdk.New("late", func(ctx sdk.Context, n int) (int, error) { calls.Add(1); return n, nil })
	reg := sdk.NewRegistry().MustRegister(wf)
	wk, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Consumer: c, Registry: reg, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	run, err := wf.Start(bg, wk.Client(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // two deliveries elsewhere, released unworked
		ds, err := lw.Receive(bg, &world.ReceiveParams{Max: 1})
		if err != nil || len(ds) != 1 {
			t.Fatalf("receive: %+v, %v", ds, err)
		}
		if err := lw.Release(bg, &world.ReleaseParams{Receipt: ds[0].Receipt}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	<-c.entered
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := c.late.Load(); n != 1 {
		t.Fatalf("the receive in flight at the stop brought %d messages, want 1", n)
	}
	close(c.released)
	for p := range c.released {
		t.Errorf("the late delivery was released (%+v), its receive counted; want it given back uncounted", p)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the workflow ran %d times after the Worker began to stop", n)
	}
	ds, err := lw.Receive(bg, &world.ReceiveParams{Max: 10})
	if err != nil || len(ds) != 1 {
		t.Fatalf("after the stop: %d visible (%+v), %v; want the message", len(ds), ds, err)
	}
	m, err := world.DecodeMessage(ds[0].Body)
	if err != nil || m.RunID != run.ID() {
		t.Fatalf("after the stop: %s, %v; want a message of run %s", ds[0].Body, err, run.ID())
	}
	if total := m.Delivered + ds[0].Attempt; total != 3 {
		t.Errorf("after the stop the message counts %d deliveries (delivered %d, attempt %d), want 3: the two before and this one, not the one given back",
			total, m.Delivered, ds[0].Attempt)
	}
}

// visibilityRecorder records the visibilities a Worker asks for.
type visibilityRecorder struct {
	*localworld.World
	receives chan time.Duration
}

func (c *visibilityRecorder) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	select {
	case c.receives <- p.Visibility:
	default:
	}
	return c.World.Receive(ctx, p)
}

// TestWorkerDefaultVisibilityIsShort: by default a Worker hides the
// messages it receives for a short while only (extending it while it
// lives, see TestWorkerKeepsALongMessageHidden), so that the runs of a
// killed worker move on within about a minute rather than after 5.
func TestWorkerDefaultVisibilityIsShort(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	c := &visibilityRecorder{World: lw, receives: make(chan time.Duration, 1)}
	wk, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Consumer: c, Registry: sdk.NewRegistry(), Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	got := <-c.receives
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got <= 0 || got > 30*time.Second {
		t.Errorf("the Worker receives with a visibility of %s, want at most 30s", got)
	}
}

// TestWorkerStopIsBounded: a step that ignores its context does not keep
// Run from returning: once StopTimeout has passed after the stop, Run
// returns an error matching context.DeadlineExceeded, and the step runs on.
func TestWorkerStopIsBounded(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	deaf := sdk.NewStep("deaf", func(context.Context, int) (int, error) {
		close(started)
		<-release // ignores its context
		return 1, nil
	})
	wf := sdk.New("deaf-flow", func(ctx sdk.Context, n int) (int, error) { return deaf.Call(ctx, n) })
	reg := sdk.NewRegistry().MustRegister(wf, deaf)
	wk, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg, Concurrency: 1, StopTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	if _, err := wf.Start(context.Background(), wk.Client(), 1); err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run returned %v, want an error matching context.DeadlineExceeded", err)
		}
	case <-time.After(30 * time.Second): // far past StopTimeout, however busy the machine
		t.Fatal("Run did not return while a step ignored its context")
	}
}
