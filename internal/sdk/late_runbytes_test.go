package sdk_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// The trial's late, late2 and fan scenarios in small: step results that
// arrive past a run's MaxRunBytes, in the background or inline, before or
// after the run's end. Each run ends as the README says, comes to rest
// without waiting for a lease to expire (the leases outlast the test), and
// stores no more than MaxRunBytes, its end's error and
// world.LateOutcomeSlack per step that outlived the bound.

// lateLimits are the limits of these tests: a few results fill a run.
var lateLimits = world.Limits{MaxPayload: 2 << 10, MaxRunBytes: 4 << 10}

// lateResultSize is the size of each result: it fits MaxPayload, and
// three of them do not fit MaxRunBytes.
const lateResultSize = 1900

// newLateEnv is an env whose step leases outlast the test: no lease
// expires, no durable sleep of an hour ends, so nothing but the limits can
// end a run, and nothing but the steps' own outcomes can bring it to rest.
func newLateEnv(t *testing.T, inline int, defs ...sdk.Definition) *env {
	return newEnvWith(t, envOptions{limits: lateLimits, concurrency: 32,
		engine: sdk.EngineOptions{InlineConcurrency: inline, StepLeaseTTL: time.Hour}}, defs...)
}

// lateBlob returns a result of lateResultSize bytes once release is
// closed, whatever its context says (as the trial's steps did).
func lateBlob(name string, release <-chan struct{}) *sdk.Step[int, string] {
	return sdk.NewStep(name, func(_ context.Context, i int) (string, error) {
		<-release
		return strings.Repeat("x", lateResultSize-2), nil
	})
}

// wantLateBounded checks a run at rest: within MaxRunBytes plus its end's
// error (end, at most MaxPayload) and LateOutcomeSlack for each of its n
// steps; no step runs, and the ones refused by the bound failed with
// LIMIT_EXCEEDED, each recorded within the slack.
func (e *env) wantLateBounded(runID string, n int, end int64) {
	e.t.Helper()
	r, err := e.lw.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
	if err != nil {
		e.t.Fatal(err)
	}
	if limit := lateLimits.MaxRunBytes + end + int64(n)*world.LateOutcomeSlack; r.PayloadBytes > limit {
		e.t.Fatalf("the run stores %d payload bytes, want at most %d (MaxRunBytes %d, its end %d, %d steps x %d)",
			r.PayloadBytes, limit, lateLimits.MaxRunBytes, end, n, world.LateOutcomeSlack)
	}
	refused := 0
	for _, ev := range e.events(runID) {
		d, ok := ev.Data.(*world.StepFailed)
		if !ok {
			continue
		}
		if d.Error == nil || d.Error.Code != world.CodeLimitExceeded || world.ErrorSize(d.Error) > world.LateOutcomeSlack {
			e.t.Fatalf("step %s failed with %+v (%d bytes), want %s within %d bytes", ev.CorrelationID, d.Error, world.ErrorSize(d.Error), world.CodeLimitExceeded, world.LateOutcomeSlack)
		}
		refused++
	}
	if refused == 0 {
		e.t.Fatalf("no step failed by the run's bytes: want the results past MaxRunBytes refused")
	}
	for _, st := range e.steps(runID) {
		if st.Status == world.StepStatusRunning {
			e.t.Fatalf("step %s (%s) is running in a run at rest", st.StepID, st.StepName)
		}
	}
}

// late: a workflow starts steps it never awaits and returns before they
// end. Their results arrive after the run's end; past MaxRunBytes each is
// recorded as the step's failure by the limit, and the run keeps its
// outcome.
func TestLateResultsPastRunBytes(t *testing.T) {
	t.Parallel()
	const n = 16
	release := make(chan struct{})
	slow := lateBlob("late-slow", release)
	quick := sdk.NewStep("late-quick", func(context.Context, int) (int, error) { return 1, nil })
	wf := sdk.New("late-bytes", func(ctx sdk.Context, _ struct{}) (int, error) {
		for i := range n {
			slow.Go(ctx, i)
		}
		return quick.Call(ctx, 1)
	})
	e := newLateEnv(t, 4, wf, slow, quick) // 3 of them inline, the others queued
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != 1 {
		t.Fatalf("Result = %d, %v; want 1", got, err)
	}
	close(release)
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatalf("the run did not come to rest: %v", err)
	}
	if info.Status != world.RunStatusCompleted {
		t.Fatalf("status %s, want the run completed as it returned", info.Status)
	}
	e.wantLateBounded(run.ID(), n, 0)
}

// late2: a workflow starts steps in the background and sleeps. Their
// results arrive while it runs; the one past MaxRunBytes fails the run
// with LIMIT_EXCEEDED (the README's promise for a step result past it),
// the others are recorded as failures by the limit, not retried, and the
// run comes to rest as soon as its last step (the one running inline,
// released once the run has failed) ends, not when leases expire.
func TestBackgroundResultsPastRunBytesFailRun(t *testing.T) {
	t.Parallel()
	const n = 8
	release, releaseInline := make(chan struct{}), make(chan struct{})
	inline := lateBlob("late2-inline", releaseInline)
	slow := lateBlob("late2-slow", release)
	wf := sdk.New("late2-bytes", func(ctx sdk.Context, _ struct{}) (int, error) {
		inline.Go(ctx, 0) // the one inline slot: the others are queued
		for i := range n {
			slow.Go(ctx, i)
		}
		if err := sdk.Sleep(ctx, time.Hour); err != nil {
			return 0, err
		}
		return 2, nil
	})
	e := newLateEnv(t, 1, wf, inline, slow)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run.ID(), world.EventWaitCreated)
	close(release)
	e.waitEvent(run.ID(), world.EventRunFailed)
	close(releaseInline)
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatalf("the run did not come to rest: %v", err)
	}
	if info.Status != world.RunStatusFailed || info.ErrorCode != world.CodeLimitExceeded {
		t.Fatalf("status %s code %q, want failed with %s", info.Status, info.ErrorCode, world.CodeLimitExceeded)
	}
	e.wantLateBounded(run.ID(), n+1, int64(lateLimits.MaxPayload))
}

// fan: a workflow awaits all of many steps whose results together pass
// MaxRunBytes. The run fails with LIMIT_EXCEEDED; the results that arrive
// after its end, inline or queued, are recorded as failures by the limit,
// not whole.
func TestFanResultsPastRunBytes(t *testing.T) {
	t.Parallel()
	const n = 20
	release := make(chan struct{})
	close(release)
	blob := lateBlob("fan-blob", release)
	wf := sdk.New("fan-bytes", func(ctx sdk.Context, _ struct{}) (int, error) {
		var fs []sdk.Future[string]
		for i := range n {
			fs = append(fs, blob.Go(ctx, i))
		}
		rs, err := sdk.All(ctx, fs...)
		return len(rs), err
	})
	e := newLateEnv(t, 4, wf, blob)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatalf("the run did not come to rest: %v", err)
	}
	if info.Status != world.RunStatusFailed || info.ErrorCode != world.CodeLimitExceeded {
		t.Fatalf("status %s code %q, want failed with %s", info.Status, info.ErrorCode, world.CodeLimitExceeded)
	}
	e.wantLateBounded(run.ID(), n, int64(lateLimits.MaxPayload))
}

// late2 at MaxEvents: a background step's result refused because its run
// has all the events it may hold fails the run with MAX_EVENTS_EXCEEDED,
// not retried until its lease expires; the others are recorded as
// failures by the limit after the end, and the run comes to rest.
func TestBackgroundResultsPastMaxEventsFailRun(t *testing.T) {
	t.Parallel()
	const n = 8
	release, releaseInline := make(chan struct{}), make(chan struct{})
	inline := lateBlob("events-inline", releaseInline)
	slow := lateBlob("events-slow", release)
	wf := sdk.New("events-late2", func(ctx sdk.Context, _ struct{}) (int, error) {
		inline.Go(ctx, 0)
		for i := range n {
			slow.Go(ctx, i)
		}
		if err := sdk.Sleep(ctx, time.Hour); err != nil {
			return 0, err
		}
		return 2, nil
	})
	// 2 for the run, 9 step_created, 9 step_started, a wait_created: 21
	// events before the first result; a few results fit, no more.
	lim := world.Limits{MaxEvents: 23}
	e := newEnvWith(t, envOptions{limits: lim, concurrency: 32,
		engine: sdk.EngineOptions{InlineConcurrency: 1, StepLeaseTTL: time.Hour}}, wf, inline, slow)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run.ID(), world.EventWaitCreated)
	waitFor(t, "the steps started", func() bool { return countEvents(e.events(run.ID()), world.EventStepStarted) == n+1 })
	close(release)
	e.waitEvent(run.ID(), world.EventRunFailed)
	close(releaseInline)
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatalf("the run did not come to rest: %v", err)
	}
	if info.Status != world.RunStatusFailed || info.ErrorCode != world.CodeMaxEventsExceeded {
		t.Fatalf("status %s code %q, want failed with %s", info.Status, info.ErrorCode, world.CodeMaxEventsExceeded)
	}
	refused := 0
	for _, ev := range e.events(run.ID()) {
		if d, ok := ev.Data.(*world.StepFailed); ok && d.Error != nil && d.Error.Code == world.CodeMaxEventsExceeded {
			refused++
		}
	}
	for _, st := range e.steps(run.ID()) {
		if st.Status == world.StepStatusRunning {
			t.Fatalf("step %s (%s) is running in a run at rest", st.StepID, st.StepName)
		}
	}
	if refused == 0 {
		t.Fatal("no step failed by the run's events limit: want the results past MaxEvents refused")
	}
}
