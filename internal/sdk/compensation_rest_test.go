package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestSagaOutcomeBeforeCompensations: a saga of three steps whose third
// fails, defined WithCompensateOnFailure, fails at once: Result returns the
// failure while the first compensation (of b) is still running, and the
// run is not deactivated yet. Then b and a are compensated, in that order,
// once each, and the run is deactivated after the last comp_succeeded.
func TestSagaOutcomeBeforeCompensations(t *testing.T) {
	t.Parallel()
	j := &journal{}
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	var steps []*sdk.Step[string, string]
	var defs []sdk.Definition
	for _, x := range []string{"a", "b", "c"} {
		undo := sdk.NewStep("ob-undo-"+x, func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
			if x == "b" {
				running <- struct{}{}
				<-release // a slow refund
			}
			j.add("undo " + c.Result)
			return struct{}{}, nil
		})
		step := sdk.NewStep("ob-"+x, func(ctx context.Context, in string) (string, error) {
			if x == "c" {
				return "", sdk.Fatal(errors.New("out of stock"))
			}
			return x + "-done", nil
		})
		steps = append(steps, sdk.WithCompensation(step, undo))
		defs = append(defs, undo, step)
	}
	saga := sdk.New("ob-saga", func(ctx sdk.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				return "", err
			}
		}
		return "done", nil
	}).WithCompensateOnFailure()
	e := newEnv(t, append(defs, saga)...)
	ctx := e.ctx()
	run, err := saga.Start(ctx, e.client, "order")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-running:
	case <-ctx.Done():
		t.Fatal("b's compensation never started")
	}
	if _, err := run.Result(ctx); err == nil || !strings.Contains(err.Error(), "out of stock") {
		t.Fatalf("Result = %v, want the failure of ob-c while b's compensation runs", err)
	}
	info, err := run.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Compensations; info.Status != world.RunStatusFailed || !info.DeactivatedAt.IsZero() || c.Running != 1 || c.Owed != 1 || c.Status() != world.StepStatusCompensating {
		t.Errorf("while compensating: status %s, deactivated %v, compensations %+v", info.Status, info.DeactivatedAt, c)
	}
	close(release)
	info, err = e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Compensations; c.Succeeded != 2 || c.Running != 0 || c.Owed != 0 || c.Status() != world.StepStatusCompensated {
		t.Errorf("after: compensations %+v", c)
	}
	if got, want := j.lines(), []string{"undo b-done", "undo a-done"}; !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	evs := e.events(run.ID())
	want := []string{"comp_started ob-b", "comp_succeeded ob-b", "comp_started ob-a", "comp_succeeded ob-a"}
	if got := compTrail(evs); !slices.Equal(got, want) {
		t.Errorf("comp trail = %q, want %q", got, want)
	}
	failed, started, deact := seqOf(evs, world.EventRunFailed), seqOf(evs, world.EventCompStarted), seqOf(evs, world.EventRunDeactivated)
	if !(failed < started && started < deact) || evs[len(evs)-1].Type() != world.EventRunDeactivated {
		t.Errorf("run_failed at %d, first comp_started at %d, run_deactivated at %d (last %s)", failed, started, deact, evs[len(evs)-1].Type())
	}
	for _, ev := range evs {
		if d, ok := ev.Data.(*world.RunFailed); ok && !d.Compensate {
			t.Errorf("run_failed does not ask for compensation: %+v", d)
		}
	}
}

// TestCompensationRetries: a compensation that fails twice is retried by
// its step's policy, each retry recorded with comp_retry_scheduled, until
// it succeeds; in a workflow that compensates itself and after a failure.
func TestCompensationRetries(t *testing.T) {
	t.Parallel()
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprint("auto=", auto), func(t *testing.T) {
			t.Parallel()
			prefix := fmt.Sprintf("rt%v-", auto)
			var calls atomic.Int32
			var meta atomic.Pointer[sdk.StepMetadata]
			undo := sdk.NewStep(prefix+"undo", func(ctx context.Context, c sdk.Compensation[int, int]) (struct{}, error) {
				md, _ := sdk.StepMetadataFrom(ctx)
				meta.Store(&md)
				if calls.Add(1) < 3 {
					return struct{}{}, errors.New("refund service down")
				}
				return struct{}{}, nil
			}, sdk.StepOptions{MaxRetries: 3, Backoff: func(int) time.Duration { return 30 * time.Millisecond }})
			charge := sdk.WithCompensation(sdk.NewStep(prefix+"charge", func(ctx context.Context, n int) (int, error) { return n, nil }), undo)
			wf := sdk.New(prefix+"wf", func(ctx sdk.Context, n int) (string, error) {
				if _, err := charge.Call(ctx, n); err != nil {
					return "", err
				}
				if auto {
					return "", errors.New("give up")
				}
				return "undone", sdk.Compensate(ctx)
			})
			if auto {
				wf = wf.WithCompensateOnFailure()
			}
			e := newEnv(t, undo, charge, wf)
			ctx := e.ctx()
			run, err := wf.Start(ctx, e.client, 7)
			if err != nil {
				t.Fatal(err)
			}
			out, err := run.Result(ctx)
			if auto != (err != nil) || !auto && out != "undone" {
				t.Fatalf("Result = %q, %v", out, err)
			}
			info, err := e.client.WaitDeactivated(ctx, run.ID())
			if err != nil {
				t.Fatal(err)
			}
			if c := info.Compensations; c.Succeeded != 1 || c.Failed != 0 {
				t.Errorf("compensations = %+v", c)
			}
			s := prefix + "charge"
			want := []string{"comp_started " + s, "comp_retry_scheduled " + s, "comp_started " + s, "comp_retry_scheduled " + s, "comp_started " + s, "comp_succeeded " + s}
			if got := compTrail(e.events(run.ID())); !slices.Equal(got, want) {
				t.Errorf("comp trail = %q, want %q", got, want)
			}
			if n := calls.Load(); n != 3 {
				t.Errorf("compensation called %d times, want 3", n)
			}
			// The compensation's metadata: its own name, the step it undoes.
			if md := meta.Load(); md == nil || !md.Compensating || md.StepName != prefix+"undo" || md.Attempt != 3 ||
				md.StepID != e.stepNamed(run.ID(), prefix+"charge").StepID {
				t.Errorf("compensation's StepMetadata = %+v", md)
			}
		})
	}
}

// TestCompensateOnFailureFanOut: in a fan-out that fails, only the branches
// that completed are compensated, a branch that completes after the run's
// end included (first: it completed last); the failed branch is not. The
// same when the branches run in the background (one inline step per
// invocation: the others are queued, and the last branch's executor,
// finding the run ended, compensates it).
func TestCompensateOnFailureFanOut(t *testing.T) {
	t.Parallel()
	for _, inline := range []int{0, 1} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) {
			t.Parallel()
			testCompensateFanOut(t, fmt.Sprintf("ff%d-", inline), inline)
		})
	}
}

func testCompensateFanOut(t *testing.T, prefix string, inline int) {
	j := &journal{}
	late, started3 := make(chan struct{}), make(chan struct{})
	var once, once3 sync.Once
	undo := sdk.NewStep(prefix+"undo", func(ctx context.Context, c sdk.Compensation[int, int]) (struct{}, error) {
		j.add(fmt.Sprint("undo ", c.Input))
		return struct{}{}, nil
	})
	branch := sdk.WithCompensation(sdk.NewStep(prefix+"branch", func(ctx context.Context, n int) (int, error) {
		switch n {
		case 2:
			<-started3 // branch 3 runs when the run fails
			return 0, sdk.Fatal(errors.New("branch 2 fails"))
		case 3:
			once3.Do(func() { close(started3) })
			<-late
		}
		return n * 10, nil
	}), undo)
	fan := sdk.New(prefix+"wf", func(ctx sdk.Context, _ int) (string, error) {
		fs := []sdk.Future[int]{branch.Go(ctx, 1), branch.Go(ctx, 2), branch.Go(ctx, 3)}
		if _, err := fs[0].Get(ctx); err != nil {
			return "", err
		}
		_, err := fs[1].Get(ctx)
		once.Do(func() { close(late) }) // branch 3 completes after the end
		return "", err
	}).WithCompensateOnFailure()
	e := newEnvWith(t, envOptions{engine: sdk.EngineOptions{InlineConcurrency: inline}}, undo, branch, fan)
	ctx := e.ctx()
	run, err := fan.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err == nil || !strings.Contains(err.Error(), "branch 2 fails") {
		t.Fatalf("Result = %v", err)
	}
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := j.lines(), []string{"undo 3", "undo 1"}; !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	if c := info.Compensations; c.Succeeded != 2 || c.Failed != 0 {
		t.Errorf("compensations = %+v", c)
	}
	evs := e.events(run.ID())
	if n := countEvents(evs, world.EventCompStarted); n != 2 {
		t.Errorf("%d comp_started, want 2", n)
	}
}

// TestCancelCompensating: a cancellation with CancelCompensating ends the
// run cancelled at once and then compensates its completed steps, most
// recent first; the run is deactivated after them.
func TestCancelCompensating(t *testing.T) {
	t.Parallel()
	j := &journal{}
	steps, defs := sagaSteps("cc-", "", j)
	wf := sdk.New("cc", func(ctx sdk.Context, in string) (string, error) {
		for _, s := range steps[:2] {
			if _, err := s.Call(ctx, in); err != nil {
				return "", err
			}
		}
		return "", sdk.Sleep(ctx, time.Hour)
	})
	e := newEnv(t, append(defs, wf)...)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run.ID(), world.EventWaitCreated)
	if err := run.Cancel(ctx, "customer changed their mind", sdk.CancelCompensating()); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); !errors.Is(err, sdk.ErrRunCancelled) {
		t.Fatalf("Result = %v, want ErrRunCancelled", err)
	}
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Compensations; !c.Requested || c.Succeeded != 2 || c.Status() != world.StepStatusCompensated {
		t.Errorf("compensations = %+v", c)
	}
	if got, want := j.lines(), []string{"do a", "do b", "undo b-done of x", "undo a-done of x"}; !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	want := []string{"comp_started cc-b", "comp_succeeded cc-b", "comp_started cc-a", "comp_succeeded cc-a"}
	if got := compTrail(e.events(run.ID())); !slices.Equal(got, want) {
		t.Errorf("comp trail = %q, want %q", got, want)
	}
}
