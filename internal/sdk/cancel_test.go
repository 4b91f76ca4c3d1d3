package sdk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

func TestCancelSleepingRun(t *testing.T) {
	t.Parallel()
	sleeping := sdk.New("sleepingLong", func(ctx sdk.Context, d time.Duration) (int, error) {
		return 1, sdk.Sleep(ctx, d)
	})
	e := newEnv(t, sleeping)
	ctx := e.ctx()
	run, err := sleeping.Start(ctx, e.client, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run.ID(), world.EventWaitCreated)
	if err := run.Cancel(ctx, "user cancelled"); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); !errors.Is(err, sdk.ErrRunCancelled) {
		t.Fatalf("result err = %v", err)
	}
	info, err := run.Info(ctx)
	if err != nil || info.Status != world.RunStatusCancelled || info.CancelReason != "user cancelled" {
		t.Errorf("info = %+v, %v", info, err)
	}
	// Cancelling twice is fine; exactly one terminal event.
	if err := run.Cancel(ctx, "again"); err != nil {
		t.Error(err)
	}
	if n := countEvents(e.events(run.ID()), world.EventRunCancelled, world.EventRunCompleted, world.EventRunFailed); n != 1 {
		t.Errorf("%d terminal events", n)
	}
}

func TestCancelRunningStep(t *testing.T) {
	t.Parallel()
	started := make(chan string, 1)
	sawCancel := make(chan error, 1)
	long := sdk.NewStep("long", func(ctx context.Context, _ struct{}) (int, error) {
		m, _ := sdk.StepMetadataFrom(ctx)
		started <- m.StepID
		select {
		case <-ctx.Done():
			sawCancel <- ctx.Err()
			return 0, ctx.Err()
		case <-time.After(10 * time.Second):
			return 1, nil
		}
	})
	never := sdk.NewStep("never", func(ctx context.Context, _ struct{}) (int, error) {
		return 0, errors.New("a pending step of a cancelled run ran")
	})
	wf := sdk.New("cancelMidStep", func(ctx sdk.Context, _ struct{}) (int, error) {
		if _, err := long.Call(ctx, struct{}{}); err != nil {
			return 0, err
		}
		return never.Call(ctx, struct{}{})
	})
	e := newEnv(t, wf, long, never)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	began := time.Now()
	if err := run.Cancel(ctx, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sawCancel:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("step saw %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the running step's context was not cancelled")
	}
	t.Logf("step cancelled %s after the run", time.Since(began))
	if _, err := run.Result(ctx); !errors.Is(err, sdk.ErrRunCancelled) {
		t.Fatalf("result = %v", err)
	}
	for _, s := range e.steps(run.ID()) {
		if s.StepName == "never" {
			t.Error("a step was created after the cancellation")
		}
	}
}

func TestCancelRefusesPendingSteps(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	ran := make(chan struct{}, 100)
	blocker := sdk.NewStep("blocker", func(ctx context.Context, i int) (int, error) {
		if i == 0 {
			<-gate
		}
		ran <- struct{}{}
		return i, nil
	})
	wf := sdk.New("manyPending", func(ctx sdk.Context, _ struct{}) ([]int, error) {
		var fs []sdk.Future[int]
		for i := range 6 {
			fs = append(fs, blocker.Go(ctx, i))
		}
		return sdk.All(ctx, fs...)
	})
	// One worker slot and one inline step: the other five wait in the queue.
	e := newEnvWith(t, envOptions{concurrency: 1, engine: sdk.EngineOptions{InlineConcurrency: 1}}, wf, blocker)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "six steps", func() bool { return len(e.steps(run.ID())) == 6 })
	if err := run.Cancel(ctx, ""); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if _, err := run.Result(ctx); !errors.Is(err, sdk.ErrRunCancelled) {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(ran); n > 1 {
		t.Errorf("%d steps ran after the cancellation", n)
	}
	for _, s := range e.steps(run.ID()) {
		if s.Status == world.StepStatusCompleted && s.Input != nil && string(s.Input) != "0" {
			t.Errorf("step %s completed", s.Input)
		}
	}
}
