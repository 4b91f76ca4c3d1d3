package dynamoworld_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestExecutorLossKeepsRetriesAndRenewedLease: an invocation dies mid-step
// after the step's lease was renewed past the expiry its step_started
// recorded. The run's next continuation goes by the lease DynamoDB holds
// (it re-runs the step only once that lease has expired, not at the log's
// expiry), and the re-run is the same attempt again: a step with no
// retries still completes, and the step counts one interrupted attempt.
func TestExecutorLossKeepsRetriesAndRenewedLease(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	started := make(chan int, 4)
	var calls atomic.Int32
	var rerunAt atomic.Int64
	fragile := workflow.NewStep("fragile", func(ctx context.Context, _ struct{}) (int, error) {
		m, _ := workflow.StepMetadataFrom(ctx)
		if calls.Add(1) == 1 {
			started <- m.Attempt
			<-ctx.Done() // the invocation dies here
			return 0, ctx.Err()
		}
		rerunAt.Store(time.Now().UnixNano())
		started <- m.Attempt
		return m.Attempt, nil
	}, workflow.StepOptions{MaxRetries: workflow.NoRetries})
	wf := workflow.New("lossy", func(ctx workflow.Context, _ struct{}) (int, error) {
		return fragile.Call(ctx, struct{}{})
	})
	reg := workflow.NewRegistry().MustRegister(wf, fragile)
	opts := worker.EngineOptions{StepLeaseTTL: time.Second}
	p, err := worker.NewProcessor(worker.Config{World: w, Registry: reg, Engine: opts}, knobs.WithRunPollInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := wf.Start(ctx, p.Client(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: 5 * time.Second, Visibility: time.Minute})
	if err != nil || len(ds) != 1 {
		t.Fatalf("receive: %v %v", ds, err)
	}
	dead, kill := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Process(dead, ds[0].Body, ds[0].Attempt) }()
	if a := <-started; a != 1 {
		t.Fatalf("first attempt %d", a)
	}
	kill()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the dying invocation: %v", err)
	}
	// The dead invocation's last renewal: its lease now outlasts the
	// expiry step_started recorded by a few seconds.
	stepID := ""
	page, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Items {
		if ev.Type() == world.EventStepCreated {
			stepID = ev.CorrelationID
		}
	}
	renewed, err := w.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: run.ID(), StepID: stepID, Attempt: 1, TTL: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Its message comes back (as after its visibility timeout) to a healthy
	// worker.
	if err := w.Release(ctx, &world.ReleaseParams{Receipt: ds[0].Receipt}); err != nil {
		t.Fatal(err)
	}
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 2, Engine: opts}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(wctx) }()
	defer func() { wcancel(); <-stopped }()
	got, err := run.Result(ctx)
	if err != nil || got != 1 {
		t.Fatalf("run %s: result %d, %v; want attempt 1 again", run.ID(), got, err)
	}
	if at := time.Unix(0, rerunAt.Load()); at.Before(renewed.LeaseExpiresAt) {
		t.Errorf("the step re-ran at %s, before its renewed lease expired (%s)", at.Format(time.StampMilli), renewed.LeaseExpiresAt.Format(time.StampMilli))
	}
	st, err := w.GetStep(ctx, &world.GetStepParams{RunID: run.ID(), StepID: stepID})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != world.StepStatusCompleted || st.Attempt != 2 || st.Interrupted != 1 {
		t.Fatalf("step %s attempt %d, %d interrupted; want completed, started twice, once interrupted", st.Status, st.Attempt, st.Interrupted)
	}
}
