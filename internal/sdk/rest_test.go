package sdk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// eventTypes lists a log's event types in order.
func eventTypes(evs []world.Event) []world.EventType {
	out := make([]world.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type()
	}
	return out
}

func eventIndex(evs []world.Event, t world.EventType) int {
	for i, ev := range evs {
		if ev.Type() == t {
			return i
		}
	}
	return -1
}

// TestOutcomeBeforeDeactivation: a workflow returns while a step it started
// and never awaited still runs. Result returns at once with the outcome
// and the run shows completed but not deactivated; the step is not
// cancelled, records its result after the end, and run_deactivated
// follows.
func TestOutcomeBeforeDeactivation(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	cancelled := make(chan error, 1)
	slow := sdk.NewStep("rest-slow", func(ctx context.Context, in string) (string, error) {
		select {
		case <-release:
			return "slow:" + in, nil
		case <-ctx.Done():
			cancelled <- ctx.Err()
			return "", ctx.Err()
		}
	})
	fast := sdk.NewStep("rest-fast", func(ctx context.Context, in string) (string, error) { return in, nil })
	wf := sdk.New("rest-forget", func(ctx sdk.Context, in string) (string, error) {
		slow.Go(ctx, in) // fire and forget: started with the next step
		return fast.Call(ctx, "done")
	})
	e := newEnv(t, wf, slow, fast)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != "done" {
		t.Fatalf("Result = %q, %v; want done", got, err)
	}
	info, err := run.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != world.RunStatusCompleted || !info.DeactivatedAt.IsZero() {
		t.Fatalf("while the step runs: status %s deactivated at %v; want completed, not deactivated", info.Status, info.DeactivatedAt)
	}
	if st := e.steps(run.ID()); len(st) != 2 || st[0].Status != world.StepStatusRunning {
		t.Fatalf("steps while the run is completed: %+v; want one running", st)
	}
	close(release)
	info, err = e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != world.RunStatusCompleted || info.DeactivatedAt.Before(info.CompletedAt) {
		t.Fatalf("after the step: status %s completed %v deactivated %v", info.Status, info.CompletedAt, info.DeactivatedAt)
	}
	select {
	case err := <-cancelled:
		t.Fatalf("the step's context was cancelled by the run's end: %v", err)
	default:
	}
	evs := e.events(run.ID())
	end, rest := eventIndex(evs, world.EventRunCompleted), eventIndex(evs, world.EventRunDeactivated)
	done := eventIndex(evs[end+1:], world.EventStepCompleted)
	if end < 0 || done < 0 || rest != len(evs)-1 || countEvents(evs, world.EventRunDeactivated) != 1 {
		t.Fatalf("log %v: want run_completed, then step_completed, then one run_deactivated last", eventTypes(evs))
	}
	if st := e.steps(run.ID()); st[0].Status != world.StepStatusCompleted || string(st[0].Output) != `"slow:x"` {
		t.Fatalf("step after the end: %s %s; want completed with its result", st[0].Status, st[0].Output)
	}
}

// TestDeactivatedWithEnd: a run with nothing left running is deactivated
// in the commit of its end, for the price of no extra Append.
func TestDeactivatedWithEnd(t *testing.T) {
	t.Parallel()
	wf := sdk.New("rest-plain", func(ctx sdk.Context, in string) (string, error) { return in, nil })
	e := newEnv(t, wf)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := run.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := e.events(run.ID())
	if info.DeactivatedAt.IsZero() || evs[len(evs)-1].Type() != world.EventRunDeactivated || evs[len(evs)-1].Seq != evs[len(evs)-2].Seq+1 {
		t.Fatalf("log %v, deactivated at %v: want run_deactivated right after run_completed", eventTypes(evs), info.DeactivatedAt)
	}
}

// TestCancelledRunCancelsSteps: cancellation still cancels the running
// step's context; the attempt records its cancellation, and the run is
// deactivated once it has.
func TestCancelledRunCancelsSteps(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	block := sdk.NewStep("rest-block", func(ctx context.Context, in string) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	wf := sdk.New("rest-cancel", func(ctx sdk.Context, in string) (string, error) {
		return block.Call(ctx, in)
	})
	e := newEnv(t, wf, block)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := run.Cancel(ctx, "enough"); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); !errors.Is(err, sdk.ErrRunCancelled) {
		t.Fatalf("Result: %v; want ErrRunCancelled", err)
	}
	if _, err := e.client.WaitDeactivated(ctx, run.ID()); err != nil {
		t.Fatal(err)
	}
	st := e.steps(run.ID())
	if len(st) != 1 || st[0].Status != world.StepStatusFailed || st[0].Error == nil || st[0].Error.Type != "RunCancelledError" {
		t.Fatalf("step of the cancelled run: %+v; want failed with RunCancelledError", st)
	}
	evs := e.events(run.ID())
	if countEvents(evs, world.EventRunCancelled) != 1 || countEvents(evs, world.EventRunDeactivated) != 1 || evs[len(evs)-1].Type() != world.EventRunDeactivated {
		t.Fatalf("log %v: want one run_cancelled and one run_deactivated, last", eventTypes(evs))
	}
}

// waitUntil polls cond for up to five seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
