package skeintest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// sagaKit is a saga whose refund fails twice (retried a minute later each
// time) before it succeeds, after the workflow failed an hour in.
type sagaKit struct {
	reg     *workflow.Registry
	run     *workflow.Workflow[string, string]
	refunds *atomic.Int32
}

func newSagaKit(prefix string) sagaKit {
	refunds := &atomic.Int32{}
	refund := workflow.NewStep(prefix+"refund", func(context.Context, workflow.Compensation[string, string]) (struct{}, error) {
		if refunds.Add(1) < 3 {
			return struct{}{}, errors.New("bank busy")
		}
		return struct{}{}, nil
	}, workflow.StepOptions{MaxRetries: 5, Backoff: func(int) time.Duration { return time.Minute }})
	charge := workflow.WithCompensation(workflow.NewStep(prefix+"charge", func(_ context.Context, in string) (string, error) {
		return "charged " + in, nil
	}), refund)
	wf := workflow.New(prefix+"saga", func(ctx workflow.Context, in string) (string, error) {
		if _, err := charge.Call(ctx, in); err != nil {
			return "", err
		}
		if err := workflow.Sleep(ctx, time.Hour); err != nil {
			return "", err
		}
		return "", workflow.Fatal(errors.New("rejected"))
	}).WithCompensateOnFailure()
	return sagaKit{reg: workflow.NewRegistry().MustRegister(refund, charge, wf), run: wf, refunds: refunds}
}

// TestWaitDeactivatedRetriedCompensation: Env.WaitDeactivated moves the
// virtual clock through a compensation's retries (backoff of a minute)
// and returns the run at rest; ExpectStepAttempts counts the
// compensation's attempts.
func TestWaitDeactivatedRetriedCompensation(t *testing.T) {
	t.Parallel()
	kit := newSagaKit("wd-")
	env := skeintest.New(t, kit.reg)
	start := env.Now()
	run, err := kit.run.Start(env.Context(), env.Client(), "trip")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := skeintest.Result(env, run); err == nil {
		t.Fatal("the saga completed, want it failed")
	}
	r := env.WaitDeactivated(run.ID())
	if r.Compensations.Succeeded != 1 || r.Compensations.Running+r.Compensations.Owed+r.Compensations.Failed != 0 {
		t.Fatalf("compensations %+v, want one succeeded", r.Compensations)
	}
	if got := kit.refunds.Load(); got != 3 {
		t.Fatalf("refund ran %d times, want 3", got)
	}
	if el := r.DeactivatedAt.Sub(start); el < time.Hour+2*time.Minute {
		t.Fatalf("at rest %s after the start, want after the hour and two minutes of backoff", el)
	}
	env.ExpectStepAttempts(run.ID(), "wd-refund", 3)
	env.ExpectStepAttempts(run.ID(), "wd-charge", 1)
	if got := skeintest.CompensationAttempts(env.Events(run.ID()), "wd-refund"); got != 3 {
		t.Fatalf("CompensationAttempts = %d, want 3", got)
	}
	env.ExpectEvents(run.ID(), world.EventRunFailed, world.EventCompStarted, world.EventCompRetryScheduled,
		world.EventCompSucceeded, world.EventRunDeactivated)
}

// TestWaitDeactivatedFailures: WaitDeactivated fails the test, saying
// which compensation is under way, when the run does not come to rest (a
// manual clock nobody advances).
func TestWaitDeactivatedFailures(t *testing.T) {
	t.Parallel()
	kit := newSagaKit("wdf-")
	got := failure(t, func(tb testing.TB) {
		env := skeintest.New(tb, kit.reg, skeintest.WithManualTime(), skeintest.WithTimeout(3*time.Second))
		run, err := kit.run.Start(env.Context(), env.Client(), "trip")
		if err != nil {
			tb.Fatalf("%v", err)
		}
		env.WaitSuspended(run.ID())
		env.Advance(time.Hour)
		env.Wait(run.ID())
		env.WaitDeactivated(run.ID())
	})
	for _, want := range []string{"did not come to rest", `compensation "wdf-refund" of step "wdf-charge" (attempt 1), retrying at`} {
		if !strings.Contains(got, want) {
			t.Errorf("failure %q, want it to contain %q", got, want)
		}
	}
}
