package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestWorkerRestartStrandsNothing: a local Worker on SQS that is stopped
// cleanly leaves no message behind in the receives it had in flight. Each
// round is a "process": a World and a Worker (default Visibility) that
// run one workflow, then stop (cancel, Run returns, Close), and the next
// round starts at once. A receive abandoned mid-poll would take the next
// round's message off the queue for the whole Visibility; here every
// round's run must finish within seconds.
func TestWorkerRestartStrandsNothing(t *testing.T) {
	t.Parallel()
	first := dynamotest.NewWorld(t, dynamotest.Options{})
	cfg := first.Config()
	ping := workflow.New("ping", func(ctx workflow.Context, n int) (int, error) { return n, nil })
	reg := workflow.NewRegistry().MustRegister(ping)
	const rounds = 4
	for i := range rounds {
		w := first
		if i > 0 {
			var err error
			if w, err = dynamoworld.New(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
		}
		if err := restartRound(t, w, reg, ping, i); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}

// restartRound starts a Worker on w, runs ping to its end within 20s, stops
// the Worker and closes w.
func restartRound(t *testing.T, w *dynamoworld.World, reg *workflow.Registry, ping *workflow.Workflow[int, int], i int) error {
	t.Helper()
	defer w.Close()
	wk, err := worker.New(worker.Config{World: w, Registry: reg})
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(wctx) }()
	defer func() {
		stop()
		began := time.Now()
		if err := <-stopped; err != nil {
			t.Errorf("round %d: Run: %v", i, err)
		}
		t.Logf("round %d: the Worker stopped in %s", i, time.Since(began).Round(time.Millisecond))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	run, err := ping.Start(ctx, wk.Client(), i)
	if err != nil {
		return err
	}
	got, err := run.Result(ctx)
	if err != nil {
		return fmt.Errorf("run %s (after %s): %w", run.ID(), time.Since(began).Round(time.Millisecond), err)
	}
	if got != i {
		return fmt.Errorf("run %s returned %d", run.ID(), got)
	}
	t.Logf("round %d: the run took %s", i, time.Since(began).Round(time.Millisecond))
	return nil
}

// TestStoppedReceiveGivesBack: a receive stopped mid-poll, by its context
// or by Close, lets its SQS call end and makes visible again at once the
// message that call brought, where a cut call would leave it hidden for
// the visibility (a minute here): the next receive gets it, as its second
// delivery.
func TestStoppedReceiveGivesBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop func(w *dynamoworld.World, cancel context.CancelFunc)
		want error
	}{
		{"cancel", func(_ *dynamoworld.World, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"close", func(w *dynamoworld.World, _ context.CancelFunc) { go w.Close() }, world.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := dynamotest.NewWorld(t, dynamotest.Options{})
			defer w.Close()
			other, err := dynamoworld.New(context.Background(), w.Config())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan error, 1)
			go func() {
				ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: 3 * time.Second, Visibility: time.Minute})
				if err == nil {
					err = fmt.Errorf("%d deliveries, no error", len(ds))
				}
				got <- err
			}()
			time.Sleep(300 * time.Millisecond) // the long poll is under way
			tc.stop(w, cancel)
			bg := context.Background()
			if _, err := other.Enqueue(bg, &world.EnqueueParams{Body: []byte("after the stop")}); err != nil {
				t.Fatal(err)
			}
			if err := <-got; !errors.Is(err, tc.want) {
				t.Fatalf("the stopped receive returned %v, want %v", err, tc.want)
			}
			ds, err := other.Receive(bg, &world.ReceiveParams{Max: 1, Wait: 2 * time.Second, Visibility: time.Minute})
			switch {
			case err != nil:
				t.Fatal(err)
			case len(ds) != 1:
				t.Fatalf("the next receive got %d messages, want the one the stopped receive took", len(ds))
			case string(ds[0].Body) != "after the stop":
				t.Fatalf("the next receive got %q", ds[0].Body)
			}
		})
	}
}

// TestReceiveKeepsToDeadline: a receive does not start a long poll longer
// than its context's deadline (rounded up to a second, as SQS counts).
func TestReceiveKeepsToDeadline(t *testing.T) {
	t.Parallel()
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	began := time.Now()
	ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: 10 * time.Second})
	took := time.Since(began)
	if len(ds) != 0 || (err != nil && !errors.Is(err, context.DeadlineExceeded)) {
		t.Fatalf("receive on an empty queue: %d messages, %v", len(ds), err)
	}
	// About 2s (the deadline rounded up); a long poll of the whole Wait
	// would take 10s: 8s tells them apart with 6s to spare on a busy machine.
	if took > 8*time.Second {
		t.Fatalf("the receive took %s past a 1.5s deadline", took)
	}
}
