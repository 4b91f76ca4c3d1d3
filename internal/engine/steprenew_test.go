package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// renewWorld counts the step lease renewals the World accepted.
type renewWorld struct {
	*localworld.World
	renewals atomic.Int32
}

func (w *renewWorld) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
	st, err := w.World.RenewStepLease(ctx, p)
	if err == nil {
		w.renewals.Add(1)
	}
	return st, err
}

// stepRenewTTL is the step lease of TestRunningStepRenewsItsLease: judged on
// the test's clock, which moves only when the test moves it; it sets how
// often the attempt's watch ticks (every third of it, on the wall clock).
const stepRenewTTL = 300 * time.Millisecond

// A step attempt renews its execution lease while it runs (watchStep): a
// second delivery of the step's message, handled once the attempt's first
// lease has expired, finds the lease renewed and does not start the step
// again. The lease is judged on a clock the test moves, so it expires only
// when the test says: each move of half the TTL is followed by a wait (on
// events, bounded by a minute) for the renewal it makes due.
func TestRunningStepRenewsItsLease(t *testing.T) {
	t.Parallel()
	clock, lw := openClocked(t)
	w := &renewWorld{World: lw}
	reg := newRegistry()
	eng, err := New(Config{World: w, Registry: reg, Now: clock.Now, Options: Options{StepLeaseTTL: stepRenewTTL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)

	entered, release := make(chan struct{}, 2), make(chan struct{})
	reg.step("slow", 0, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		entered <- struct{}{}
		select {
		case <-release:
			return mustJSON(1), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	reg.wf("w", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		f := c.Step("slow", nil)
		c.Await(f.Done)
		return mustJSON(1), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runID := world.NewIDSource(nil, nil).New(world.PrefixRun)
	stepID := newDetSource(runID).id(world.PrefixStep)
	if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "w", Input: mustJSON(nil)}},
		{Data: &world.RunStarted{}},
		{CorrelationID: stepID, Data: &world.StepCreated{StepName: "slow", Input: mustJSON(nil)}},
	}}); err != nil {
		t.Fatal(err)
	}
	// Another executor holds the run, so the step's executors only run it.
	if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: runID, Owner: "holder", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}

	first := make(chan error, 1)
	go func() { first <- eng.Handle(ctx, world.Message{RunID: runID, StepID: stepID}) }()
	select {
	case <-entered:
	case err := <-first:
		t.Fatalf("the delivery ended before the step started: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the step did not start within a minute")
	}
	for range 2 {
		n := w.renewals.Load()
		clock.Advance(stepRenewTTL / 2)
		for deadline := time.Now().Add(time.Minute); w.renewals.Load() == n; {
			if time.Now().After(deadline) {
				t.Fatalf("no renewal of the step's lease within a minute of the clock passing a third of its TTL (%d renewals)", n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The first lease ended at the step's start plus the TTL, a quarter of
	// the TTL ago; the last renewal's runs three quarters of a TTL more.
	clock.Advance(stepRenewTTL / 4)
	second := make(chan error, 1)
	go func() { second <- eng.Handle(ctx, world.Message{RunID: runID, StepID: stepID}) }()
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("the second delivery: %v", err)
		}
	case <-entered:
		t.Fatal("a second delivery started the step again while its first attempt ran: the attempt's lease was not renewed")
	case <-time.After(time.Minute):
		t.Fatal("the second delivery did not end within a minute")
	}
	st, err := w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != world.StepStatusRunning || st.Attempt != 1 || !st.LeaseExpiresAt.After(clock.Now()) {
		t.Fatalf("step %s attempt %d, lease until %s (now %s): want attempt 1 running under a live lease",
			st.Status, st.Attempt, st.LeaseExpiresAt.Format(time.RFC3339Nano), clock.Now().Format(time.RFC3339Nano))
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first delivery: %v", err)
	}
	st, err = w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
	if err != nil || st.Status != world.StepStatusCompleted || st.Attempt != 1 {
		t.Fatalf("step after the first attempt ended: %+v %v, want completed in attempt 1", st, err)
	}
}
