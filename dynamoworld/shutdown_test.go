package dynamoworld_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/dynamoworld/dynamotest"
	"github.com/skeinflow/skein/workflow"
)

// TestWorkerRestartStrandsNothing: a local Worker on SQS that is stopped
// cleanly leaves no message behind in the receives it had in flight. Each
// round is a "process": a World and a Worker (default Visibility, 5m) that
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
	wk, err := workflow.NewWorker(workflow.WorkerConfig{World: w, Registry: reg})
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
