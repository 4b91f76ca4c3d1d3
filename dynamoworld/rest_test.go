package dynamoworld_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestRestOnDynamo: on DynamoDB and SQS, a run's outcome is visible while a
// step it started still runs, run_deactivated follows once the step has
// recorded its result; a cleanup hook runs once per completed run, before
// Result returns, and never for a failed run; a cancelled run's step is
// cancelled and recorded so.
func TestRestOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	release := make(chan struct{})
	var cleanups atomic.Int32
	slow := workflow.NewStep("rest-slow", func(ctx context.Context, in string) (string, error) {
		if in == "block" {
			<-ctx.Done()
			return "", ctx.Err()
		}
		select {
		case <-release:
			return "late:" + in, nil
		case <-ctx.Done():
			return "", errors.New("cancelled by the run's end")
		}
	})
	fast := workflow.NewStep("rest-fast", func(ctx context.Context, in string) (string, error) { return in, nil })
	wf := workflow.New("rest", func(ctx workflow.Context, in string) (string, error) {
		switch in {
		case "fail":
			return "", errors.New("no")
		case "block":
			return slow.Call(ctx, in)
		}
		slow.Go(ctx, in)
		return fast.Call(ctx, "done:"+in)
	}).WithCleanup(func(ctx context.Context, c *workflow.Cleanup[string, string]) error {
		cleanups.Add(1)
		return nil
	})
	client, stop := deployOn(t, ctx, w, workflow.NewRegistry().MustRegister(wf, slow, fast))
	defer stop()

	run, err := wf.Start(ctx, client, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != "done:x" {
		t.Fatalf("Result = %q, %v", got, err)
	}
	info, err := run.Info(ctx)
	if err != nil || info.Status != world.RunStatusCompleted || !info.DeactivatedAt.IsZero() || info.Cleanup != world.CleanupDone || cleanups.Load() != 1 {
		t.Fatalf("while the step runs: %+v, %v, %d cleanups; want completed, cleaned up once, not deactivated", info, err, cleanups.Load())
	}
	close(release)
	if info, err = client.WaitDeactivated(ctx, run.ID()); err != nil || info.Status != world.RunStatusCompleted {
		t.Fatalf("WaitDeactivated: %+v, %v", info, err)
	}
	evs := listAll(t, w, run.ID())
	types := map[world.EventType]int{}
	for _, e := range evs {
		types[e.Type()]++
	}
	if types[world.EventRunDeactivated] != 1 || types[world.EventRunCleanedUp] != 1 || types[world.EventStepCompleted] != 2 || evs[len(evs)-1].Type() != world.EventRunDeactivated {
		t.Fatalf("log %v: want both steps completed, one run_cleaned_up, one run_deactivated last", types)
	}

	failed, err := wf.Start(ctx, client, "fail")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failed.Result(ctx); err == nil {
		t.Fatal("the failing run succeeded")
	}
	if info, err := client.WaitDeactivated(ctx, failed.ID()); err != nil || info.Cleanup != "" {
		t.Fatalf("failed run: %+v, %v", info, err)
	}
	if n := cleanups.Load(); n != 1 {
		t.Fatalf("%d cleanups after a completed and a failed run; want 1", n)
	}

	blocked, err := wf.Start(ctx, client, "block")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the step to start", func() bool {
		p, err := w.ListSteps(ctx, &world.ListStepsParams{RunID: blocked.ID(), Pagination: world.Pagination{Limit: 10}})
		return err == nil && len(p.Items) == 1 && p.Items[0].Status == world.StepStatusRunning
	})
	if err := blocked.Cancel(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.WaitDeactivated(ctx, blocked.ID()); err != nil {
		t.Fatal(err)
	}
	st, err := w.ListSteps(ctx, &world.ListStepsParams{RunID: blocked.ID(), Pagination: world.Pagination{Limit: 10}})
	if err != nil || st.Items[0].Status != world.StepStatusFailed || st.Items[0].Error.Type != "RunCancelledError" {
		t.Fatalf("step of the cancelled run: %+v, %v", st, err)
	}
}

func listAll(t *testing.T, w world.World, runID string) []world.Event {
	t.Helper()
	p, err := w.ListEvents(context.Background(), &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Items
}
